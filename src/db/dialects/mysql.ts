import { createConnection } from 'mysql2/promise';
import { boundedMysqlDriver } from '../mysql-driver';
import { MIGRATION_LOCK_WAIT_MS, type SqlDialect, withRunner } from './dialect';

const withMysqlScheme = (url: string) => url.replace(/^mariadb:/, 'mysql:');

/** MySQL and MariaDB through mysql2. */
export const mysql: SqlDialect = {
  name: 'mysql',
  options: (url) => ({
    type: 'mysql',
    url: withMysqlScheme(url),
    logging: false,
    supportBigNumbers: true,
    bigNumberStrings: true,
    // 2 cores here: enough that reservations and admin queries do not queue, without flooding the server.
    poolSize: 10,
    // Bounded waits (invariant 7): a statement timeout dropping the stuck connection (mysql-driver.ts), a
    // connect timeout, and keep-alive probes after 5 s idle instead of the kernel's 2 h.
    driver: boundedMysqlDriver(),
    connectTimeout: 3000,
    // No stack captured per statement (mysql2's `trace`): a third of an idle instance's SQL cost (a CPU profile
    // of bench/idle.bench.ts); errors are logged by their message.
    trace: false,
    extra: { enableKeepAlive: true, keepAliveInitialDelay: 5000 },
  }),
  describe(url) {
    const u = new URL(url);
    return `mysql ${u.hostname}:${u.port || 3306}${u.pathname}`;
  },
  /** A fresh MySQL server has no idpool schema yet: create it, as migrations then create the tables. */
  async createIfMissing(url) {
    const u = new URL(withMysqlScheme(url));
    const schema = decodeURIComponent(u.pathname.replace(/^\//, ''));
    if (!schema) return;
    u.pathname = '/';
    const connection = await createConnection({ uri: u.toString(), connectTimeout: 5000 });
    try {
      // utf8mb4 whatever the server's default (latin1 on older servers), so any printable entity name stores.
      await connection.query(
        `CREATE DATABASE IF NOT EXISTS \`${schema.replace(/`/g, '``')}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
      );
    } finally {
      await connection.end();
    }
  },
  /** `GET_LOCK` on one dedicated connection: instances starting at once on a fresh schema take turns. */
  withMigrationLock: (dataSource, run) =>
    withRunner(dataSource, async (runner) => {
      const [{ locked }] = (await runner.query(
        `SELECT GET_LOCK('idpool_migrations', ${MIGRATION_LOCK_WAIT_MS / 1000}) AS locked`,
      )) as [{ locked: unknown }];
      if (Number(locked) !== 1)
        throw new Error(`could not take the migration lock within ${MIGRATION_LOCK_WAIT_MS / 1000} s`);
      try {
        return await run();
      } finally {
        await runner.query("SELECT RELEASE_LOCK('idpool_migrations')");
      }
    }),
  /** mysql2 answers a statement with its OkPacket (affectedRows, insertId) or the rows. */
  async statement(dataSource, sql, params) {
    const raw: unknown[] | { affectedRows: number; insertId?: number | string } = await dataSource.query(sql, params);
    if (Array.isArray(raw)) return { records: raw, affectedRows: 0 };
    return {
      records: [],
      affectedRows: raw.affectedRows,
      insertId: raw.insertId === undefined ? undefined : String(raw.insertId),
    };
  },
  rows: (dataSource, sql, params) => dataSource.query(sql, params),
  bigText: (column) => `CAST(${column} AS CHAR)`,
  nowMs: 'CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)',
};
