import { expect, it } from 'vitest';
import { systemClock } from '../../src/clock';
import { openDatabase } from '../../src/db/database';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { type DatabaseBehindReport, createIdGenerator } from '../../src/library';
import { SQL_SERVERS, createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(
    `library: a database that went back under a running generator (${name})`,
    { [server]: true },
    () => {
      it('carries past its own last reservation at once, reports database_behind once, hands out nothing twice', async () => {
        const schema = await createTestSchema(server);
        const db = await openDatabase(schema.url);
        try {
          await new EntityRegistry(new SqlEntityStore(db), systemClock).register({
            key: 'orders',
            mode: 'monotonic',
            step: 1000,
          } as never);
          const reports: DatabaseBehindReport[] = [];
          // Steps stay 1,000: every 1,000 ids is one reservation, so the restore is met at a known point.
          const generator = await createIdGenerator({
            database: db,
            maxStep: 1000,
            onDatabaseBehind: (report) => reports.push(report),
          });
          try {
            const seen = new Set<bigint>(await generator.take('orders', 5000));
            // The backup: the row as it is now (the generator holds a prefetched segment above it).
            const [backup] = await db.query<{ c: string }>(
              `SELECT ${db.bigText('current_offset')} AS c FROM application WHERE entity_key = 'orders'`,
            );
            for (const id of await generator.take('orders', 50_000)) seen.add(id);
            expect(seen.size).toBe(55_000);
            const highest = [...seen].reduce((a, b) => (b > a ? b : a));

            // The restore: the row's offset goes back to the backup's while the generator runs.
            await db.execute(`UPDATE application SET current_offset = ? WHERE entity_key = 'orders'`, [backup.c]);
            const started = performance.now();
            const after = await generator.take('orders', 5000);
            expect(performance.now() - started).toBeLessThan(2000);
            for (const id of after) expect(seen.has(id), `id ${id} was handed out before the restore`).toBe(false);
            expect(after.every((id) => id > highest)).toBe(true);
            expect(reports).toHaveLength(1);
            expect(reports[0]).toMatchObject({ entityKey: 'orders', record: 'this process' });
            expect(reports[0].databaseOffset).toBe(BigInt(backup.c));
            expect(reports[0].carriedTo).toBeGreaterThan(highest);
          } finally {
            await generator.close();
          }
        } finally {
          await db.close();
          await schema.drop();
        }
      });
    },
  );
}
