import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { Client as PgClient, escapeIdentifier } from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { migrations } from '../../migrations';
import { UnavailableError } from '../errors';
import { boundedMysqlDriver } from './mysql-driver';

export type Dialect = 'mysql' | 'postgres' | 'sqlite';

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

/** Whether a database URL names PostgreSQL (`postgres://` or `postgresql://`). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** Longest the event loop may block on a locked SQLite file in one statement. */
export const SQLITE_BUSY_TIMEOUT_MS = 20;

/** SQLite's "another connection holds the lock": worth retrying after a moment. */
export function isBusy(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown } } | undefined;
  const code = e?.driverError?.code ?? e?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED';
}

/**
 * The relational store behind idpool: a TypeORM DataSource plus the few
 * dialect differences the SQL needs. BIGINT values cross this boundary as
 * decimal strings (never JS numbers) so offsets above 2^53 stay exact.
 */
export interface Database {
  readonly dialect: Dialect;
  readonly dataSource: DataSource;
  /** Where the data lives, for the start-up log (path or host/db, no password). */
  readonly description: string;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a statement and returns its affected-row count. */
  execute(sql: string, params?: unknown[]): Promise<{ affectedRows: number; insertId?: string }>;
  /** SQL expression selecting a BIGINT column as text. */
  bigText(column: string): string;
  /** SQL expression for the database's own clock, in Unix milliseconds. */
  readonly nowMs: string;
  close(): Promise<void>;
}

export function dataSourceOptions(url: string): DataSourceOptions {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length) || './idpool.db';
    return { type: 'better-sqlite3', database: path, migrations, migrationsRun: false, logging: false };
  }
  if (isPostgresUrl(url)) {
    return {
      type: 'postgres',
      url,
      migrations,
      logging: false,
      poolSize: 10, // as MySQL below
      connectTimeoutMS: POSTGRES_CONNECT_TIMEOUT_MS,
      // node-postgres Pool/Client options: bounded waits (DESIGN.md invariant
      // 7) and TCP keep-alive so a dead peer behind a silent network is noticed.
      extra: {
        statement_timeout: POSTGRES_STATEMENT_TIMEOUT_MS,
        query_timeout: POSTGRES_QUERY_TIMEOUT_MS,
        keepAlive: true,
      },
    };
  }
  return {
    type: 'mysql',
    url: url.replace(/^mariadb:/, 'mysql:'),
    migrations,
    logging: false,
    supportBigNumbers: true,
    bigNumberStrings: true,
    // 2 cores here; a handful of connections keeps reservations and admin
    // queries from queueing behind each other without flooding the server.
    poolSize: 10,
    // Bounded waits (invariant 7): a statement timeout that drops the stuck
    // connection (see mysql-driver.ts), a connect timeout, and TCP
    // keep-alive probes after 5 s idle instead of the kernel's 2 h.
    driver: boundedMysqlDriver(),
    connectTimeout: 3000,
    extra: { enableKeepAlive: true, keepAliveInitialDelay: 5000 },
  };
}

function describe(url: string): string {
  if (url.startsWith('sqlite:')) return `sqlite file ${resolve(url.slice('sqlite:'.length) || './idpool.db')}`;
  const u = new URL(url);
  if (isPostgresUrl(url)) return `postgres ${u.hostname}:${u.port || 5432}${u.pathname}`;
  return `mysql ${u.hostname}:${u.port || 3306}${u.pathname}`;
}

/** Opens the database, creating the SQLite folder, MySQL schema or PostgreSQL database if needed, and runs migrations. */
export async function openDatabase(url: string, options: { migrate?: boolean } = {}): Promise<Database> {
  const opts = dataSourceOptions(url);
  if (opts.type === 'better-sqlite3' && opts.database !== ':memory:') {
    mkdirSync(dirname(resolve(opts.database)), { recursive: true });
  }
  if (opts.type === 'mysql') await createSchemaIfMissing(url);
  if (opts.type === 'postgres') await createPostgresDatabaseIfMissing(url);
  const dataSource = new DataSource(opts);
  await dataSource.initialize();
  const dialect: Dialect = opts.type === 'mysql' ? 'mysql' : opts.type === 'postgres' ? 'postgres' : 'sqlite';
  if (dialect === 'sqlite') {
    // WAL lets readers run beside the single writer. better-sqlite3 is
    // synchronous, so busy_timeout blocks the whole event loop while another
    // process holds the write lock: keep it short and retry asynchronously
    // (see isBusy and SqlSegmentAllocator) instead.
    await dataSource.query('PRAGMA journal_mode = WAL');
    await dataSource.query(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    await dataSource.query('PRAGMA synchronous = FULL');
  }
  const db = wrap(dataSource, dialect, describe(url));
  if (options.migrate !== false) await migrate(db);
  return db;
}

/** A fresh MySQL server has no idpool schema yet: create it, as migrations then create the tables. */
async function createSchemaIfMissing(url: string): Promise<void> {
  const u = new URL(url.replace(/^mariadb:/, 'mysql:'));
  const schema = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!schema) return;
  u.pathname = '/';
  const connection = await createConnection({ uri: u.toString(), connectTimeout: 5000 });
  try {
    // utf8mb4 whatever the server's default (latin1 on older servers), so any printable entity name stores.
    await connection.query(`CREATE DATABASE IF NOT EXISTS \`${schema.replace(/`/g, '``')}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await connection.end();
  }
}

/** PostgreSQL error codes (Appendix A of its manual) met when creating a database. */
const PG_INVALID_CATALOG_NAME = '3D000';
const PG_DUPLICATE_DATABASE = '42P04';
const PG_UNIQUE_VIOLATION = '23505';

/**
 * A fresh PostgreSQL server has no idpool database yet. Unlike MySQL there is
 * no `CREATE DATABASE IF NOT EXISTS` and no connecting without a database, so:
 * try the database itself; only if it does not exist, connect to the
 * `postgres` maintenance database and create it. A user who may not create
 * databases gets one clear line saying what to do.
 */
async function createPostgresDatabaseIfMissing(url: string): Promise<void> {
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
  const admin = new PgClient({ connectionString: u.toString(), connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${escapeIdentifier(name)}`);
  } catch (err) {
    const code = (err as { code?: string }).code;
    // Another process starting at the same moment created it first.
    if (code === PG_DUPLICATE_DATABASE || code === PG_UNIQUE_VIOLATION) return;
    throw new Error(
      `PostgreSQL database "${name}" does not exist on ${u.hostname}:${u.port || 5432} and could not be created ` +
        `(${(err as Error).message}); create it (CREATE DATABASE ${escapeIdentifier(name)}) or grant CREATEDB to the user`,
    );
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/**
 * Runs pending migrations. Several instances starting at once on a fresh
 * MySQL schema or PostgreSQL database would race to create the same tables,
 * so they take turns under a lock held by one dedicated connection (MySQL
 * `GET_LOCK`, PostgreSQL a session advisory lock).
 */
export async function migrate({ dataSource, dialect }: Pick<Database, 'dataSource' | 'dialect'>): Promise<string[]> {
  const run = async () => (await dataSource.runMigrations({ transaction: 'each' })).map((m) => m.name);
  if (dialect === 'postgres') return migratePostgres(dataSource, run);
  if (dialect !== 'mysql') {
    // Processes opening a fresh file at once race on CREATE TABLE: the loser
    // gets SQLITE_BUSY or "already exists"; once the winner has committed, a
    // retry finds every migration recorded and does nothing.
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        return await run();
      } catch (err) {
        const racing = isBusy(err) || /already exists/i.test(String((err as Error)?.message));
        if (!racing || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 10 + Math.random() * 40));
      }
    }
  }
  const runner = dataSource.createQueryRunner();
  try {
    const [{ locked }] = await runner.query("SELECT GET_LOCK('idpool_migrations', 60) AS locked");
    if (Number(locked) !== 1) throw new Error('could not take the migration lock within 60 s');
    try {
      return await run();
    } finally {
      await runner.query("SELECT RELEASE_LOCK('idpool_migrations')");
    }
  } finally {
    await runner.release();
  }
}

async function migratePostgres(dataSource: DataSource, run: () => Promise<string[]>): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  const lock = "hashtext('idpool_migrations')";
  try {
    // pg_try_advisory_lock in a loop rather than a blocking pg_advisory_lock:
    // a blocking wait would be cut off by statement_timeout, which is short.
    const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
    for (;;) {
      const [{ locked }] = await runner.query(`SELECT pg_try_advisory_lock(${lock}) AS locked`);
      if (locked === true) break;
      if (Date.now() > deadline) throw new Error(`could not take the migration lock within ${MIGRATION_LOCK_WAIT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 50));
    }
    try {
      return await run();
    } finally {
      await runner.query(`SELECT pg_advisory_unlock(${lock})`);
    }
  } finally {
    await runner.release();
  }
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
 * PostgreSQL SQLSTATE classes and codes that mean the server is unreachable,
 * shutting down, overloaded or timed out (statement_timeout is 57014), not
 * that the statement was wrong: connection exception (08), insufficient
 * resources (53), operator intervention (57), serialization failure and
 * deadlock (40001, 40P01), lock not available (55P03).
 */
const PG_UNAVAILABLE = /^(08|53|57)|^(40001|40P01|55P03)$/;
/** node-postgres's own messages for a lost connection or its query_timeout / connectionTimeoutMillis. */
const PG_CLIENT_UNAVAILABLE = /Connection terminated|Query read timeout|timeout exceeded when trying to connect|not queryable|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH/i;

/**
 * A PostgreSQL failure that is the database being unavailable becomes an
 * UnavailableError (503 with Retry-After), like MySQL's and SQLite's
 * connection and lock errors do in the HTTP error handler; anything else is
 * passed on untouched.
 */
export function postgresUnavailable(err: unknown): unknown {
  const e = err as { code?: unknown; message?: unknown; driverError?: { code?: unknown } } | undefined;
  const code = e?.driverError?.code ?? e?.code;
  if ((typeof code === 'string' && PG_UNAVAILABLE.test(code)) || PG_CLIENT_UNAVAILABLE.test(String(e?.message ?? ''))) {
    return new UnavailableError(`the database is unavailable: ${String(e?.message ?? err)}`, 1);
  }
  return err;
}

function wrap(dataSource: DataSource, dialect: Dialect, description: string): Database {
  /** TypeORM's structured result: rows and affected count, the same shape on SQLite and PostgreSQL. */
  const structured = async (sql: string, params?: unknown[]) => {
    const runner = dataSource.createQueryRunner();
    try {
      if (dialect !== 'postgres') return await runner.query(sql, params, true);
      return await runner.query(toPostgresPlaceholders(sql), params, true).catch((err) => Promise.reject(postgresUnavailable(err)));
    } finally {
      await runner.release();
    }
  };
  return {
    dialect,
    dataSource,
    description,
    // TypeORM answers a PostgreSQL UPDATE … RETURNING with [rows, count]
    // rather than rows: take the rows from the structured result instead.
    query: dialect === 'postgres' ? async (sql, params) => (await structured(sql, params)).records : (sql, params) => dataSource.query(sql, params),
    async execute(sql, params) {
      if (dialect === 'mysql') {
        const raw = await dataSource.query(sql, params);
        return { affectedRows: raw.affectedRows, insertId: raw.insertId === undefined ? undefined : String(raw.insertId) };
      }
      const result = await structured(sql, params);
      return { affectedRows: result.affected ?? 0 };
    },
    bigText: (column) => (dialect === 'mysql' ? `CAST(${column} AS CHAR)` : `CAST(${column} AS TEXT)`),
    nowMs: NOW_MS[dialect],
    close: () => dataSource.destroy(),
  };
}

/** The database's own clock in Unix ms; PostgreSQL's clock_timestamp() is the wall clock now, not the transaction's start. */
const NOW_MS: Record<Dialect, string> = {
  mysql: 'CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)',
  postgres: 'FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint',
  sqlite: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
};
