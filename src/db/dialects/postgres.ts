import { Client as PgClient, escapeIdentifier } from 'pg';
import { UnavailableError, errorMessage } from '../../errors';
import { classifyWith, isRetryable } from '../../failure';
import { classifyPostgresError } from '../errors/postgres';
import { boundedPostgresDriver } from '../postgres-driver';
import { retryUntil } from '../../retry';
import { MIGRATION_LOCK_WAIT_MS, type SqlDialect, structuredQuery, withRunner } from './dialect';

/** `statement_timeout`: far above a reservation (~1 ms), short enough that a stuck row lock is a 503, not a hung refill. */
export const POSTGRES_STATEMENT_TIMEOUT_MS = 5000;
/** `query_timeout`, the client's: a server that stopped answering cancels nothing. */
const POSTGRES_QUERY_TIMEOUT_MS = POSTGRES_STATEMENT_TIMEOUT_MS + 1000;
/** How long connecting may take before the database counts as unavailable. */
const POSTGRES_CONNECT_TIMEOUT_MS = 5000;

/** Another process holds the migration lock (thrown, once the wait is over, by the last try). */
class MigrationLockBusy extends Error {
  constructor() {
    super(`could not take the migration lock within ${MIGRATION_LOCK_WAIT_MS / 1000} s`);
    this.name = 'MigrationLockBusy';
  }
}

/** Whether a database URL names PostgreSQL (`postgres://` or `postgresql://`). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** idpool's `?` placeholders as node-postgres's `$1, $2, …`, outside quoted strings and identifiers. */
export function toPostgresPlaceholders(sql: string): string {
  let n = 0;
  // A quoted string or identifier runs to its closing quote, or to the end when it has none.
  return sql.replace(/'[^']*'?|"[^"]*"?|\?/g, (m) => (m === '?' ? `$${++n}` : m));
}

/** A PostgreSQL failure that is the database unavailable or busy as an UnavailableError (503); anything else untouched. */
export function postgresUnavailable(err: unknown): unknown {
  if (!isRetryable(classifyWith([classifyPostgresError], err))) return err;
  return new UnavailableError('the database is unavailable', 1, errorMessage(err));
}

/** PostgreSQL through node-postgres. */
export const postgres: SqlDialect = {
  name: 'postgres',
  options: (url, clock) => ({
    type: 'postgres',
    url,
    logging: false,
    poolSize: 10, // as MySQL
    connectTimeoutMS: POSTGRES_CONNECT_TIMEOUT_MS,
    // A connection whose statement timed out is dropped, not reused (see postgres-driver.ts).
    driver: boundedPostgresDriver(clock),
    // Bounded waits (docs/design.md invariant 7); keep-alive notices a dead peer behind a silent network.
    extra: {
      statement_timeout: POSTGRES_STATEMENT_TIMEOUT_MS,
      query_timeout: POSTGRES_QUERY_TIMEOUT_MS,
      keepAlive: true,
    },
  }),
  describe(url) {
    const u = new URL(url);
    return `postgres ${u.hostname}:${u.port || 5432}${u.pathname}`;
  },
  /** No `CREATE DATABASE IF NOT EXISTS` here: tries the database, and only if missing creates it from `postgres`. */
  async createIfMissing(url) {
    const client = (connectionString: string) =>
      new PgClient({ connectionString, connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS });
    const probe = client(url);
    try {
      await probe.connect();
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '3D000') throw err; // invalid_catalog_name (PostgreSQL, Appendix A)
    } finally {
      await probe.end().catch(() => undefined);
    }
    const u = new URL(url);
    const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
    u.pathname = '/postgres';
    const admin = client(u.toString());
    try {
      await admin.connect();
      await admin.query(`CREATE DATABASE ${escapeIdentifier(name)}`);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // duplicate_database, unique_violation: another process starting at the same moment created it first.
      if (code === '42P04' || code === '23505') return;
      throw new Error(
        `PostgreSQL database "${name}" does not exist on ${u.hostname}:${u.port || 5432} and could not be created ` +
          `(${errorMessage(err)}); create it (CREATE DATABASE ${escapeIdentifier(name)}) or grant CREATEDB to the user`,
        { cause: err },
      );
    } finally {
      await admin.end().catch(() => undefined);
    }
  },
  /** A session advisory lock on one dedicated connection. */
  withMigrationLock: (dataSource, run, clock) =>
    withRunner(dataSource, async (runner) => {
      const lock = "hashtext('idpool_migrations')";
      const tryLock = async () => {
        const [row] = (await runner.query(`SELECT pg_try_advisory_lock(${lock}) AS locked`)) as [{ locked: unknown }];
        if (row.locked !== true) throw new MigrationLockBusy();
      };
      // Tried in a loop: a blocking pg_advisory_lock would be cut off by the short statement_timeout.
      const retryable = (err: unknown) => err instanceof MigrationLockBusy;
      await retryUntil(tryLock, { clock, waitMs: MIGRATION_LOCK_WAIT_MS, pauseMs: [50, 50], retryable });
      try {
        return await run();
      } finally {
        await runner.query(`SELECT pg_advisory_unlock(${lock})`);
      }
    }),
  // TypeORM answers an UPDATE … RETURNING with [rows, count]: the rows from the structured result instead.
  rows: async (dataSource, sql, params) => (await postgres.statement(dataSource, sql, params)).records,
  statement: (dataSource, sql, params) =>
    structuredQuery(dataSource, toPostgresPlaceholders(sql), params).catch((err: unknown) => {
      throw postgresUnavailable(err);
    }),
  bigText: (column) => `CAST(${column} AS TEXT)`,
  // clock_timestamp() is the wall clock now, not the transaction's start.
  nowMs: 'FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint',
};
