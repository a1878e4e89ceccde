import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database';
import { SQL_STATEMENT_TIMEOUT_MS } from '../../src/db/mysql-driver';
import { dependencyFailure } from '../../src/http/dependency-failure';
import { type PrivateMariadb, privateMariadbPossible, startPrivateMariadb } from '../support/mariadb';
import { freePort } from '../support/processes';
import { expectFailure, rejection } from '../support/failures';

/**
 * MariaDB failures provoked for real on a private mariadbd, through idpool's
 * own Database (TypeORM over the bounded mysql2 driver), so the classifier
 * sees them wrapped as the stores and the HTTP handler do.
 */
describe.skipIf(!privateMariadbPossible() && process.env.IDPOOL_REQUIRE_SERVICES !== '1')(
  'MariaDB failures, provoked and classified',
  () => {
    let server: PrivateMariadb;
    let db: Database;
    const opened: Database[] = [];

    beforeAll(async () => {
      server = await startPrivateMariadb();
      db = await openDatabase(server.url);
      opened.push(db);
      await db.query('CREATE TABLE t (id INT PRIMARY KEY, big BIGINT NOT NULL) ENGINE=InnoDB');
      await db.query('INSERT INTO t VALUES (1, 0), (2, 9223372036854775800)');
    }, 60_000);

    afterAll(async () => {
      await Promise.all(opened.map((d) => d.close().catch(() => undefined)));
      await server?.destroy();
    });

    /** One connection of its own (a TypeORM query runner), for transactions that hold locks. */
    const session = async () => {
      const runner = db.dataSource.createQueryRunner();
      await runner.connect();
      return runner;
    };

    it('a refused connection: ECONNREFUSED → unavailable/refused', async () => {
      const port = await freePort();
      expectFailure(await rejection(openDatabase(`mysql://root@127.0.0.1:${port}/idpool`)), {
        class: 'unavailable',
        kind: 'refused',
      });
    });

    it('a row lock held past innodb_lock_wait_timeout: ER_LOCK_WAIT_TIMEOUT → busy/lock_timeout, 503', async () => {
      const [holder, waiter] = await Promise.all([session(), session()]);
      try {
        await holder.startTransaction();
        await holder.query('SELECT * FROM t WHERE id = 1 FOR UPDATE');
        await waiter.query('SET SESSION innodb_lock_wait_timeout = 1');
        const err = await rejection(waiter.query('UPDATE t SET big = big + 1 WHERE id = 1'));
        expectFailure(err, { class: 'busy', kind: 'lock_timeout' });
        expect(dependencyFailure(err)).toBe('lock_timeout');
      } finally {
        await holder.rollbackTransaction();
        await Promise.all([holder.release(), waiter.release()]);
      }
    });

    it('two transactions waiting on each other: ER_LOCK_DEADLOCK → busy/deadlock', async () => {
      const [a, b] = await Promise.all([session(), session()]);
      try {
        await a.startTransaction();
        await b.startTransaction();
        await a.query('UPDATE t SET big = big WHERE id = 1');
        await b.query('UPDATE t SET big = big WHERE id = 2');
        const crossed = await Promise.allSettled([
          a.query('UPDATE t SET big = big WHERE id = 2'),
          b.query('UPDATE t SET big = big WHERE id = 1'),
        ]);
        const victim = crossed.find((r) => r.status === 'rejected');
        expectFailure(victim?.reason, { class: 'busy', kind: 'deadlock' });
      } finally {
        await a.rollbackTransaction().catch(() => undefined);
        await b.rollbackTransaction().catch(() => undefined);
        await Promise.all([a.release(), b.release()]);
      }
    });

    it('a statement past the driver statement timeout: the dropped connection → unavailable/timeout', async () => {
      const err = await rejection(db.query(`SELECT SLEEP(${(SQL_STATEMENT_TIMEOUT_MS + 2000) / 1000})`));
      expectFailure(err, { class: 'unavailable', kind: 'timeout' });
    }, 20_000);

    it('its connection killed (KILL CONNECTION): → unavailable', async () => {
      const [victim, killer] = await Promise.all([session(), session()]);
      try {
        const [{ id }] = (await victim.query('SELECT CONNECTION_ID() AS id')) as { id: number }[];
        await killer.query(`KILL CONNECTION ${id}`);
        expectFailure(await rejection(victim.query('SELECT 1')), { class: 'unavailable' });
      } finally {
        await Promise.all([victim.release().catch(() => undefined), killer.release()]);
      }
    });

    it('data the server refuses: duplicate key → conflict, BIGINT overflow → invalid, a missing table → unavailable (a restore under way: 503)', async () => {
      const duplicate = await rejection(db.query('INSERT INTO t VALUES (1, 0)'));
      expectFailure(duplicate, { class: 'conflict', kind: 'duplicate' });
      const overflow = await rejection(db.query('UPDATE t SET big = big + 100 WHERE id = 2'));
      expectFailure(overflow, { class: 'invalid', kind: 'out_of_range' });
      const missing = await rejection(db.query('SELECT * FROM no_such_table'));
      expectFailure(missing, { class: 'unavailable', kind: 'database_schema' });
      expect(dependencyFailure(missing)).toBe('database_schema');
      for (const err of [duplicate, overflow]) expect(dependencyFailure(err)).toBeUndefined();
    });

    it('a read-only server (SET GLOBAL read_only): ER_OPTION_PREVENTS_STATEMENT → unavailable/read_only, 503', async () => {
      await db.query("CREATE USER IF NOT EXISTS 'app'@'127.0.0.1'");
      await db.query("GRANT ALL ON idpool.* TO 'app'@'127.0.0.1'");
      const app = await openDatabase(`mysql://app@127.0.0.1:${server.port}/idpool`, { migrate: false });
      opened.push(app);
      await db.query('SET GLOBAL read_only = ON');
      try {
        const err = await rejection(app.query('UPDATE t SET big = big + 1 WHERE id = 1'));
        expectFailure(err, { class: 'unavailable', kind: 'read_only' });
        expect(dependencyFailure(err)).toBe('read_only');
      } finally {
        await db.query('SET GLOBAL read_only = OFF');
      }
    });

    it('a killed server (kill -9): → unavailable', async () => {
      await db.query('SELECT 1');
      await server.kill9();
      expectFailure(await rejection(db.query('SELECT 1')), { class: 'unavailable' });
      // Once it is gone for good, new connections are refused.
      expectFailure(await rejection(db.query('SELECT 1')), { class: 'unavailable' });
    });
  },
);
