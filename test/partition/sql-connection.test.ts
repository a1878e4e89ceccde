/**
 * A SQL connection whose statement timed out over a dead link is dropped,
 * not handed out again: after the link is back every statement answers at
 * once on a fresh connection. A relay in front of the shared server drops
 * everything while cut (a half-open link as the driver sees it); no
 * namespace needed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Database, POSTGRES_STATEMENT_TIMEOUT_MS, openDatabase } from '../../src/db/database';
import { SQL_STATEMENT_TIMEOUT_MS } from '../../src/db/mysql-driver';
import { type Relay, startRelay } from '../support/relay';
import { SQL_SERVERS, type SqlServer, type TestSchema, createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

/** The client-side bound of each dialect (PostgreSQL: query_timeout, a second over statement_timeout). */
const CLIENT_BOUND_MS: Record<SqlServer, number> = {
  mysql: SQL_STATEMENT_TIMEOUT_MS,
  postgres: POSTGRES_STATEMENT_TIMEOUT_MS + 1000,
};

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(`${name}: a statement timed out on a cut link drops its connection`, { [server]: true }, () => {
    let schema: TestSchema;
    let relay: Relay;
    let db: Database;

    beforeAll(async () => {
      schema = await createTestSchema(server);
      const u = new URL(schema.url);
      relay = await startRelay({ host: u.hostname, port: Number(u.port) });
      u.hostname = relay.host;
      u.port = String(relay.port);
      db = await openDatabase(u.toString());
    });

    afterAll(async () => {
      await db.close().catch(() => undefined);
      await relay.close();
      await schema.drop();
    });

    it('fails within its bound while cut; after the heal every statement answers within a second', async () => {
      // Several connections in the pool, as under load.
      await Promise.all(Array.from({ length: 6 }, () => db.query('SELECT 1 AS one')));
      relay.cut();
      const started = Date.now();
      const during = await Promise.allSettled(Array.from({ length: 4 }, () => db.query('SELECT 1 AS one')));
      const waited = Date.now() - started;
      expect(during.every((r) => r.status === 'rejected')).toBe(true);
      // Generous for a loaded 2-core machine; never the kernel's minutes.
      expect(waited).toBeLessThan(CLIENT_BOUND_MS[server] + 4000);
      relay.heal();
      for (let i = 0; i < 20; i++) {
        const t = Date.now();
        await expect(db.query('SELECT 1 AS one')).resolves.toHaveLength(1);
        expect(Date.now() - t).toBeLessThan(1000);
      }
    }, 60_000);
  });
}
