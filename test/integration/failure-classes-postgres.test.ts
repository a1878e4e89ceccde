import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database';
import { UnavailableError } from '../../src/errors';
import { dependencyFailure } from '../../src/http/dependency-failure';
import { type PostgresServer, startPostgresServer } from '../support/postgres-server';
import { freePort } from '../support/processes';
import { expectFailure, rejection } from '../support/failures';
import { sleep } from '../support/wait';

/**
 * PostgreSQL failures provoked for real on a private server, through
 * idpool's Database (TypeORM over the bounded node-postgres driver): query
 * runners show the driver's error as TypeORM wraps it (what the classifier
 * reads), `db.query` what the stores get (an UnavailableError for the
 * retryable ones).
 */
describe('PostgreSQL failures, provoked and classified', () => {
  let server: PostgresServer;
  let db: Database;
  const opened: Database[] = [];

  beforeAll(async () => {
    server = await startPostgresServer();
    db = await openDatabase(server.url('idpool'));
    opened.push(db);
    await db.query('CREATE TABLE t (id INT PRIMARY KEY, big BIGINT NOT NULL)');
    await db.query('INSERT INTO t VALUES (1, 0), (2, 9223372036854775800)');
  }, 60_000);

  afterAll(async () => {
    server?.resume();
    await Promise.all(opened.map((d) => d.close().catch(() => undefined)));
    await server?.stop();
  });

  const session = async () => {
    const runner = db.dataSource.createQueryRunner();
    await runner.connect();
    return runner;
  };

  it('a refused connection: ECONNREFUSED → unavailable/refused', async () => {
    const port = await freePort();
    expectFailure(await rejection(openDatabase(`postgres://postgres@127.0.0.1:${port}/idpool`)), {
      class: 'unavailable',
      kind: 'refused',
    });
  });

  it('lock_timeout (55P03), statement_timeout (57014) → busy; the stores get a 503', async () => {
    const [holder, waiter] = await Promise.all([session(), session()]);
    try {
      await holder.startTransaction();
      await holder.query('SELECT * FROM t WHERE id = 1 FOR UPDATE');
      await waiter.query("SET lock_timeout = '200ms'");
      expectFailure(await rejection(waiter.query('UPDATE t SET big = big + 1 WHERE id = 1')), {
        class: 'busy',
        kind: 'lock_timeout',
      });
      await waiter.query("SET lock_timeout = 0; SET statement_timeout = '200ms'");
      const cancelled = await rejection(waiter.query('UPDATE t SET big = big + 1 WHERE id = 1'));
      expectFailure(cancelled, { class: 'busy', kind: 'timeout' });
      expect(dependencyFailure(cancelled)).toBe('timeout');
    } finally {
      await holder.rollbackTransaction();
      // The pool hands this connection out again.
      await waiter.query('RESET ALL');
      await Promise.all([holder.release(), waiter.release()]);
    }
  });

  it('two transactions waiting on each other: 40P01 → busy/deadlock', async () => {
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

  it('a read-only database (default_transaction_read_only): 25006 → unavailable/read_only; the stores get a 503', async () => {
    await db.query('ALTER DATABASE idpool SET default_transaction_read_only = on');
    try {
      // Only sessions opened after the change are read-only.
      const ro = await openDatabase(server.url('idpool'), { migrate: false });
      opened.push(ro);
      const runner = ro.dataSource.createQueryRunner();
      try {
        const err = await rejection(runner.query('UPDATE t SET big = big + 1 WHERE id = 1'));
        expectFailure(err, { class: 'unavailable', kind: 'read_only' });
        expect(dependencyFailure(err)).toBe('read_only');
      } finally {
        await runner.release();
      }
      expect(await rejection(ro.query('UPDATE t SET big = big + 1 WHERE id = 1'))).toBeInstanceOf(UnavailableError);
    } finally {
      await db.query('ALTER DATABASE idpool SET default_transaction_read_only = off');
    }
  });

  it('its backend terminated (pg_terminate_backend): 57P01 → unavailable', async () => {
    const [victim, killer] = await Promise.all([session(), session()]);
    try {
      const [{ pid }] = (await victim.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[];
      await killer.query('SELECT pg_terminate_backend($1)', [pid]);
      expectFailure(await rejection(victim.query('SELECT 1')), { class: 'unavailable' });
    } finally {
      await Promise.all([victim.release().catch(() => undefined), killer.release()]);
    }
  });

  it('data the server refuses: duplicate key → conflict, bigint overflow → invalid, a missing table → unavailable (a restore under way: 503)', async () => {
    const runner = await session();
    try {
      const duplicate = await rejection(runner.query('INSERT INTO t VALUES (1, 0)'));
      expectFailure(duplicate, { class: 'conflict', kind: 'duplicate' });
      const overflow = await rejection(runner.query('UPDATE t SET big = big + 100 WHERE id = 2'));
      expectFailure(overflow, { class: 'invalid', kind: 'out_of_range' });
      const missing = await rejection(runner.query('SELECT * FROM no_such_table'));
      expectFailure(missing, { class: 'unavailable', kind: 'database_schema' });
      expect(dependencyFailure(missing)).toBe('database_schema');
      for (const err of [duplicate, overflow]) expect(dependencyFailure(err)).toBeUndefined();
    } finally {
      await runner.release();
    }
  });

  it('a server that stops answering (SIGSTOP): node-postgres query_timeout, marked by the driver → unavailable/timeout', async () => {
    const runner = await session();
    server.pause();
    try {
      expectFailure(await rejection(runner.query('SELECT 1')), { class: 'unavailable', kind: 'timeout' });
    } finally {
      server.resume();
      await runner.release();
    }
  }, 20_000);

  it('a killed server (kill -9): the connection ended under a statement, then refused connects → unavailable', async () => {
    const runner = await session();
    const sleeping = rejection(runner.query('SELECT pg_sleep(10)'));
    await sleep(300);
    await server.kill9();
    expectFailure(await sleeping, { class: 'unavailable', kind: 'lost' });
    await runner.release().catch(() => undefined);
    expectFailure(await rejection(db.dataSource.query('SELECT 1')), { class: 'unavailable' });
    expect(await rejection(db.query('SELECT 1'))).toBeInstanceOf(UnavailableError);
  }, 20_000);
});
