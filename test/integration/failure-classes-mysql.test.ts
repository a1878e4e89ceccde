import { expect, it } from 'vitest';
import { SQL_STATEMENT_TIMEOUT_MS } from '../../src/db/mysql-driver';
import { dependencyFailure } from '../../src/http/dependency-failure';
import { describeWithServices } from '../support/describe-with-services';
import { startPrivateMariadb } from '../support/mariadb';
import { expectFailure, rejection } from '../support/failures';
import { SqlFailureSuite } from '../support/sql-failure-suite';

/**
 * MariaDB failures provoked for real on a private mariadbd, through idpool's
 * own Database (TypeORM over the bounded mysql2 driver), so the classifier
 * sees them wrapped as the stores and the HTTP handler do.
 */
describeWithServices('MariaDB failures, provoked and classified', { privateMariadb: true }, () => {
  const suite = new SqlFailureSuite({
    start: () => startPrivateMariadb(),
    stop: (server) => server.destroy(),
    url: (port) => `mysql://root@127.0.0.1:${port}/idpool`,
    tableOptions: ' ENGINE=InnoDB',
  });
  const session = () => suite.session();

  suite.refusedConnection();
  suite.deadlock('ER_LOCK_DEADLOCK');
  suite.killedConnection('KILL CONNECTION', 'SELECT CONNECTION_ID()', 'KILL CONNECTION ?');
  suite.refusedData('database');

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

  it('a statement past the driver statement timeout: the dropped connection → unavailable/timeout', async () => {
    const err = await rejection(suite.db.query(`SELECT SLEEP(${(SQL_STATEMENT_TIMEOUT_MS + 2000) / 1000})`));
    expectFailure(err, { class: 'unavailable', kind: 'timeout' });
  }, 20_000);

  it('a read-only server (SET GLOBAL read_only): ER_OPTION_PREVENTS_STATEMENT → unavailable/read_only, 503', async () => {
    const { db, server } = suite;
    await db.query("CREATE USER IF NOT EXISTS 'app'@'127.0.0.1'");
    await db.query("GRANT ALL ON idpool.* TO 'app'@'127.0.0.1'");
    const app = await suite.open(`mysql://app@127.0.0.1:${server.port}/idpool`, { migrate: false });
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
    const { db, server } = suite;
    await db.query('SELECT 1');
    await server.kill9();
    expectFailure(await rejection(db.query('SELECT 1')), { class: 'unavailable' });
    // Once it is gone for good, new connections are refused.
    expectFailure(await rejection(db.query('SELECT 1')), { class: 'unavailable' });
  });
});
