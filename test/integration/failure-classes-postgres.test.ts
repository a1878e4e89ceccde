import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/errors';
import { dependencyFailure } from '../../src/http/dependency-failure';
import { startPostgresServer } from '../support/postgres-server';
import { expectFailure, rejection } from '../support/failures';
import { SqlFailureSuite } from '../support/sql-failure-suite';
import { sleep } from '../support/wait';

/**
 * PostgreSQL failures provoked for real on a private server, through
 * idpool's Database (TypeORM over the bounded node-postgres driver): query
 * runners show the driver's error as TypeORM wraps it (what the classifier
 * reads), `db.query` what the stores get (an UnavailableError for the
 * retryable ones).
 */
describe('PostgreSQL failures, provoked and classified', () => {
  const suite = new SqlFailureSuite({
    start: () => startPostgresServer(),
    stop: (server) => {
      server.resume();
      return server.stop();
    },
    url: (port) => `postgres://postgres@127.0.0.1:${port}/idpool`,
  });
  const session = () => suite.session();

  suite.refusedConnection();
  suite.deadlock('40P01');
  suite.killedConnection('pg_terminate_backend: 57P01', 'SELECT pg_backend_pid()', 'SELECT pg_terminate_backend($1)');
  suite.refusedData('session');

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

  it('a read-only database (default_transaction_read_only): 25006 → unavailable/read_only; the stores get a 503', async () => {
    const { db, server } = suite;
    await db.query('ALTER DATABASE idpool SET default_transaction_read_only = on');
    try {
      // Only sessions opened after the change are read-only.
      const ro = await suite.open(server.url('idpool'), { migrate: false });
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

  it('a server that stops answering (SIGSTOP): node-postgres query_timeout, marked by the driver → unavailable/timeout', async () => {
    const runner = await session();
    suite.server.pause();
    try {
      expectFailure(await rejection(runner.query('SELECT 1')), { class: 'unavailable', kind: 'timeout' });
    } finally {
      suite.server.resume();
      await runner.release();
    }
  }, 20_000);

  it('a killed server (kill -9): the connection ended under a statement, then refused connects → unavailable', async () => {
    const runner = await session();
    const sleeping = rejection(runner.query('SELECT pg_sleep(10)'));
    await sleep(300);
    await suite.server.kill9();
    expectFailure(await sleeping, { class: 'unavailable', kind: 'lost' });
    await runner.release().catch(() => undefined);
    expectFailure(await rejection(suite.db.dataSource.query('SELECT 1')), { class: 'unavailable' });
    expect(await rejection(suite.db.query('SELECT 1'))).toBeInstanceOf(UnavailableError);
  }, 20_000);
});
