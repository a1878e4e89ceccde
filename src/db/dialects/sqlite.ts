import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { DataSource } from 'typeorm';
import { sqlitePath } from '../database-url';
import { classifyWith } from '../../failure';
import { classifySqliteError, markIfSchemaMissing } from '../errors/sqlite';
import { retryUntil } from '../../retry';
import type { Clock } from '../../clock';
import { type SqlDialect, structuredQuery } from './dialect';

/** Longest the event loop may block on a locked SQLite file in one statement. */
export const SQLITE_BUSY_TIMEOUT_MS = 20;
/** How long processes opening a fresh file at once keep retrying its first writes (migrations, the stride). */
const FIRST_WRITE_RACE_MS = 10_000;

/** SQLite's "another connection holds the lock": worth retrying after a moment. */
export function isBusy(err: unknown): boolean {
  return classifyWith([classifySqliteError], err)?.class === 'busy';
}

/** How long a reservation's statement waits for a SQLite write lock held by another process. */
const BUSY_WAIT_MS = 5000;

/** `run` again while another process holds SQLite's write lock (the allocator's and number counter's statements, a gapless BEGIN). */
export function whileBusy<T>(run: () => Promise<T>, clock: Clock): Promise<T> {
  return retryUntil(run, { clock, waitMs: BUSY_WAIT_MS, pauseMs: [2, 8], retryable: isBusy });
}

/** `run` again while processes opening one fresh file at once race on their first writes; `retryable` tells a lost race. */
export function whileRacing<T>(run: () => Promise<T>, clock: Clock, retryable = isBusy): Promise<T> {
  return retryUntil(run, { clock, waitMs: FIRST_WRITE_RACE_MS, pauseMs: [10, 40], retryable });
}

/** `query`'s failure, marked first when one of idpool's tables is missing. */
const schemaChecked = <T>(dataSource: DataSource, query: Promise<T>) =>
  query.catch(async (err: unknown) => {
    await markIfSchemaMissing(dataSource, err);
    throw err;
  });

/** SQLite through better-sqlite3: one file, one writer at a time. */
export const sqlite: SqlDialect = {
  name: 'sqlite',
  options: (url) => ({ type: 'better-sqlite3', database: sqlitePath(url), migrationsRun: false, logging: false }),
  describe: (url) => `sqlite file ${resolve(sqlitePath(url))}`,
  async createIfMissing(url) {
    const path = sqlitePath(url);
    if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
  },
  async afterConnect(dataSource: DataSource) {
    // WAL: readers beside the single writer. busy_timeout blocks the event loop (better-sqlite3 is
    // synchronous): short, and retried asynchronously instead (isBusy).
    await dataSource.query('PRAGMA journal_mode = WAL');
    await dataSource.query(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    await dataSource.query('PRAGMA synchronous = FULL');
  },
  // No lock: processes opening a fresh file race on CREATE TABLE, the loser busy or "already exists" (no code of
  // its own, so any SQLite failure) retries until the winner's migrations are all recorded.
  withMigrationLock: (_dataSource, run, clock) =>
    whileRacing(run, clock, (err) => classifyWith([classifySqliteError], err) !== undefined),
  statement: (dataSource, sql, params) => schemaChecked(dataSource, structuredQuery(dataSource, sql, params)),
  rows: (dataSource, sql, params) => schemaChecked(dataSource, dataSource.query(sql, params)),
  bigText: (column) => `CAST(${column} AS TEXT)`,
  nowMs: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
};
