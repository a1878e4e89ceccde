import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { systemClock } from '../../src/clock';
import { type Database, openDatabase } from '../../src/db/database';
import { ConflictError } from '../../src/errors';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const SETUPS = [
  { name: 'MariaDB', needs: { mysql: true } },
  { name: 'SQLite', needs: {} },
] as const;

for (const { name, needs } of SETUPS) {
  describeWithServices(`registrations arriving together are inserted in batches (${name})`, needs, () => {
    let db: Database;
    let cleanup: () => Promise<void>;

    beforeAll(async () => {
      if (name === 'MariaDB') {
        const schema = await createTestSchema();
        db = await openDatabase(schema.url);
        cleanup = () => schema.drop();
      } else {
        const dir = mkdtempSync(join(tmpdir(), 'idpool-batch-'));
        db = await openDatabase(`sqlite:${join(dir, 'idpool.db')}`);
        cleanup = async () => rmSync(dir, { recursive: true, force: true });
      }
    });

    afterAll(async () => {
      await db?.close();
      await cleanup?.();
    });

    it('registers each key exactly once among concurrent and repeated registrations, in few statements', async () => {
      let inserts = 0;
      const counting: Database = {
        ...db,
        execute: (q, p) => (q.startsWith('INSERT') && inserts++, db.execute(q, p)),
      };
      const registry = new EntityRegistry(new SqlEntityStore(counting), systemClock);
      // 300 distinct keys, 20 of them asked for three times, all at once.
      const keys = Array.from({ length: 300 }, (_, i) => `batch-${i}`);
      const asked = [...keys, ...keys.slice(0, 20), ...keys.slice(0, 20)];
      const results = await Promise.allSettled(
        asked.map((key) =>
          registry.register({ key, mode: 'monotonic', step: 10, maxPoolSize: 100, maxSizePerTimes: 10 }),
        ),
      );
      const ok = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(ok).toHaveLength(300);
      expect(refused).toHaveLength(40);
      for (const r of refused) expect(r.reason).toBeInstanceOf(ConflictError);
      // Every key once, with the secret hash of the registration that won.
      const rows = await db.query<{ entity_key: string; secret_hash: string }>(
        'SELECT entity_key, secret_hash FROM application',
      );
      expect(rows.map((r) => r.entity_key).sort()).toEqual([...keys].sort());
      const won = new Map(
        ok.map((r) => [(r as PromiseFulfilledResult<{ entity: { key: string } }>).value.entity.key, r]),
      );
      for (const row of rows)
        expect(
          (won.get(row.entity_key) as PromiseFulfilledResult<{ entity: { secrets: readonly { hash: string }[] } }>)
            .value.entity.secrets[0].hash,
        ).toBe(row.secret_hash);
      // Far fewer statements than registrations (the duplicates' batch is retried row by row).
      expect(inserts).toBeLessThan(asked.length / 2);
      // A later repeat is still a conflict.
      await expect(registry.register({ key: 'batch-7', mode: 'monotonic' })).rejects.toBeInstanceOf(ConflictError);
    });
  });
}
