import { createConnection } from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { type Database, openDatabase } from '../../src/db/database';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

describeWithServices('the registry refresh reads changed rows only (MariaDB)', { mysql: true }, () => {
  let schema: Awaited<ReturnType<typeof createTestSchema>>;
  let db: Database;

  beforeAll(async () => {
    schema = await createTestSchema();
    db = await openDatabase(schema.url);
  });

  afterAll(async () => {
    await db?.close();
    await schema?.drop();
  });

  it('runs changedSince as a range scan of the update_time index, not a full-table read', async () => {
    // 5,000 entities last changed an hour ago, 3 changed just now.
    const now = Date.now();
    const sql = await createConnection({ uri: schema.url });
    try {
      const rows = Array.from({ length: 5003 }, (_, i) => {
        const at = i < 5000 ? now - 3_600_000 + i : now;
        return [`e${i}`, `e${i}`, 'segment', 1, 0, 100, 0, 100, 0, 80, 100, 1000, 'f'.repeat(64), at, at, 0];
      });
      await sql.query(
        'INSERT INTO application (entity_key, entity_name, id_mode, increasing_type, start_offset, step, current_offset, max_size_per_times, max_size_per_second, min_size_percent, `interval`, max_pool_size, secret_hash, create_time, update_time, deleted_at) VALUES ?',
        [rows],
      );
      await sql.query('ANALYZE TABLE application');

      // The statement EntityStore really sends, captured from the database wrapper.
      const sent: { sql: string; params: unknown[] }[] = [];
      const spy: Database = {
        ...db,
        query: (q, p = []) => (sent.push({ sql: q, params: p }), db.query(q, p)),
      };
      const changed = await new SqlEntityStore(spy).changedSince(now - 5000);
      expect(changed.map((c) => c.entity.key).sort()).toEqual(['e5000', 'e5001', 'e5002']);
      expect(sent).toHaveLength(1);

      const [plan] = (await sql.query(`EXPLAIN ${sent[0].sql}`, sent[0].params)) as unknown as [
        { type: string; key: string | null; rows: number | string }[],
      ];
      expect(plan).toHaveLength(1);
      expect(plan[0].type).toBe('range');
      expect(plan[0].key).toBe('idx_application_update_time');
      expect(Number(plan[0].rows)).toBeLessThan(100);
    } finally {
      await sql.end();
    }
  });
});
