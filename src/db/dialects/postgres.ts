import { Client as PgClient, escapeIdentifier } from 'pg';
import { UnavailableError, errorMessage } from '../../errors';
import { classifyWith, isRetryable } from '../../failure';
import { classifyPostgresError } from '../errors/postgres';
import { boundedPostgresDriver } from '../postgres-driver';
import { retryUntil } from '../../retry';
import { type SqlDialect, structuredQuery } from './dialect';

/**
 * Longest one PostgreSQL statement may run (server side, `statement_timeout`).
 * Every idpool statement touches one row or a handful; 5 s is far above a
 * healthy reservation (~1 ms) and short enough that a row lock held by a
 * stuck transaction gives a 503 with Retry-After rather than a hung refill.
 */
export const POSTGRES_STATEMENT_TIMEOUT_MS = 5000;
/**
 * Client-side bound on the same (`query_timeout`): a server that stopped
 * answering never cancels anything, so the client gives up a second later.
 */
const POSTGRES_QUERY_TIMEOUT_MS = POSTGRES_STATEMENT_TIMEOUT_MS + 1000;
/** How long connecting may take before the database counts as unavailable. */
const POSTGRES_CONNECT_TIMEOUT_MS = 5000;
/** Longest a starting process waits for another one's migrations (as MySQL's GET_LOCK). */
const MIGRATION_LOCK_WAIT_MS = 60_000;

/** Another process holds the migration lock (thrown, once the wait is over, by the last try). */
class MigrationLockBusy extends Error {
  constructor() {
    super(`could not take the migration lock within ${MIGRATION_LOCK_WAIT_MS / 1000} s`);
    this.name = 'MigrationLockBusy';
  }
}

/** PostgreSQL error codes (Appendix A of its manual) met when creating a database. */
const PG_INVALID_CATALOG_NAME = '3D000';
const PG_DUPLICATE_DATABASE = '42P04';
const PG_UNIQUE_VIOLATION = '23505';

/** Whether a database URL names PostgreSQL (`postgres://` or `postgresql://`). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/**
 * idpool's SQL is written with `?` placeholders (MySQL and SQLite); node-postgres
 * wants `$1, $2, …`. Rewrites every `?` outside quoted strings and identifiers.
 */
export function toPostgresPlaceholders(sql: string): string {
  let out = '';
  let n = 0;
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = undefined;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
    } else if (ch === '?') {
      out += `$${++n}`;
      continue;
    }
    out += ch;
  }
  return out;
}

/**
 * A PostgreSQL failure that is the database being unavailable or busy
 * (db/errors/postgres.ts) becomes an UnavailableError (503 with
 * Retry-After); anything else is passed on untouched.
 */
export function postgresUnavailable(err: unknown): unknown {
  if (!isRetryable(classifyWith([classifyPostgresError], err))) return err;
  return new UnavailableError('the database is unavailable', 1, errorMessage(err));
}

/** PostgreSQL through node-postgres. */
export const postgres: SqlDialect = {
  name: 'postgres',
  matches: isPostgresUrl,
  options: (url, clock) => ({
    type: 'postgres',
    url,
    logging: false,
    poolSize: 10, // as MySQL
    connectTimeoutMS: POSTGRES_CONNECT_TIMEOUT_MS,
    // A connection whose statement timed out is dropped, not reused (see postgres-driver.ts).
    driver: boundedPostgresDriver(clock),
    // node-postgres Pool/Client options: bounded waits (docs/design.md invariant
    // 7) and TCP keep-alive so a dead peer behind a silent network is noticed.
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
  /**
   * A fresh PostgreSQL server has no idpool database yet. Unlike MySQL there is
   * no `CREATE DATABASE IF NOT EXISTS` and no connecting without a database, so:
   * try the database itself; only if it does not exist, connect to the
   * `postgres` maintenance database and create it. A user who may not create
   * databases gets one clear line saying what to do.
   */
  async createIfMissing(url) {
    const probe = new PgClient({ connectionString: url, connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS });
    try {
      await probe.connect();
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== PG_INVALID_CATALOG_NAME) throw err;
    } finally {
      await probe.end().catch(() => undefined);
    }
    const u = new URL(url);
    const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
    u.pathname = '/postgres';
    const admin = new PgClient({
      connectionString: u.toString(),
      connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
    });
    try {
      await admin.connect();
      await admin.query(`CREATE DATABASE ${escapeIdentifier(name)}`);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // Another process starting at the same moment created it first.
      if (code === PG_DUPLICATE_DATABASE || code === PG_UNIQUE_VIOLATION) return;
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
  async withMigrationLock(dataSource, run, clock) {
    const runner = dataSource.createQueryRunner();
    const lock = "hashtext('idpool_migrations')";
    try {
      // pg_try_advisory_lock in a loop rather than a blocking pg_advisory_lock:
      // a blocking wait would be cut off by statement_timeout, which is short.
      await retryUntil(
        async () => {
          const [{ locked }] = (await runner.query(`SELECT pg_try_advisory_lock(${lock}) AS locked`)) as [
            { locked: unknown },
          ];
          if (locked !== true) throw new MigrationLockBusy();
        },
        {
          clock,
          waitMs: MIGRATION_LOCK_WAIT_MS,
          pauseMs: [50, 50],
          retryable: (err) => err instanceof MigrationLockBusy,
        },
      );
      try {
        return await run();
      } finally {
        await runner.query(`SELECT pg_advisory_unlock(${lock})`);
      }
    } finally {
      await runner.release();
    }
  },
  // TypeORM answers a PostgreSQL UPDATE … RETURNING with [rows, count]
  // rather than rows: take the rows from the structured result instead.
  rows: async (dataSource, sql, params) => (await postgres.statement(dataSource, sql, params)).records,
  statement: (dataSource, sql, params) =>
    structuredQuery(dataSource, toPostgresPlaceholders(sql), params).catch((err: unknown) => {
      throw postgresUnavailable(err);
    }),
  bigText: (column) => `CAST(${column} AS TEXT)`,
  // clock_timestamp() is the wall clock now, not the transaction's start.
  nowMs: 'FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint',
};
