import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { migrations } from '../../migrations';

export type Dialect = 'mysql' | 'sqlite';

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
  };
}

function describe(url: string): string {
  if (url.startsWith('sqlite:')) return `sqlite file ${resolve(url.slice('sqlite:'.length) || './idpool.db')}`;
  const u = new URL(url);
  return `mysql ${u.hostname}:${u.port || 3306}${u.pathname}`;
}

/** Opens the database, creating the SQLite folder or MySQL schema if needed, and runs migrations. */
export async function openDatabase(url: string, options: { migrate?: boolean } = {}): Promise<Database> {
  const opts = dataSourceOptions(url);
  if (opts.type === 'better-sqlite3' && opts.database !== ':memory:') {
    mkdirSync(dirname(resolve(opts.database)), { recursive: true });
  }
  if (opts.type === 'mysql') await createSchemaIfMissing(url);
  const dataSource = new DataSource(opts);
  await dataSource.initialize();
  const dialect: Dialect = opts.type === 'mysql' ? 'mysql' : 'sqlite';
  if (dialect === 'sqlite') {
    // WAL lets readers run beside the single writer. better-sqlite3 is
    // synchronous, so busy_timeout blocks the whole event loop while another
    // process holds the write lock: keep it short and retry asynchronously
    // (see isBusy and SqlSegmentAllocator) instead.
    await dataSource.query('PRAGMA journal_mode = WAL');
    await dataSource.query(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    await dataSource.query('PRAGMA synchronous = FULL');
  }
  if (options.migrate !== false) await migrate(dataSource, dialect);
  return wrap(dataSource, dialect, describe(url));
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

/**
 * Runs pending migrations. Several instances starting at once on a fresh
 * MySQL schema would race to create the same tables, so they take turns
 * under a named lock held by one dedicated connection.
 */
async function migrate(dataSource: DataSource, dialect: Dialect): Promise<void> {
  if (dialect !== 'mysql') {
    // Processes opening a fresh file at once race on CREATE TABLE: the loser
    // gets SQLITE_BUSY or "already exists"; once the winner has committed, a
    // retry finds every migration recorded and does nothing.
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await dataSource.runMigrations({ transaction: 'each' });
        return;
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
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query("SELECT RELEASE_LOCK('idpool_migrations')");
    }
  } finally {
    await runner.release();
  }
}

function wrap(dataSource: DataSource, dialect: Dialect, description: string): Database {
  return {
    dialect,
    dataSource,
    description,
    query: (sql, params) => dataSource.query(sql, params),
    async execute(sql, params) {
      if (dialect === 'mysql') {
        const raw = await dataSource.query(sql, params);
        return { affectedRows: raw.affectedRows, insertId: raw.insertId === undefined ? undefined : String(raw.insertId) };
      }
      const runner = dataSource.createQueryRunner();
      try {
        const result = await runner.query(sql, params, true);
        return { affectedRows: result.affected ?? 0 };
      } finally {
        await runner.release();
      }
    },
    bigText: (column) => (dialect === 'mysql' ? `CAST(${column} AS CHAR)` : `CAST(${column} AS TEXT)`),
    nowMs: dialect === 'mysql' ? 'CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)' : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    close: () => dataSource.destroy(),
  };
}
