import BetterSqlite from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { type Classifier, type Failure, failure } from '../../failure';

/** Marks a SQLite failure met while one of idpool's tables is missing (a restore under way). */
const SCHEMA_MISSING = Symbol('idpool.sqliteSchemaMissing');
const IDPOOL_TABLES = ['application', 'worker', 'idpool_meta'];

/** After a SQLITE_ERROR ("no such table" is in words only) marks the error when one of idpool's tables is missing: a 503, as MySQL's. */
export async function markIfSchemaMissing(dataSource: DataSource, thrown: unknown): Promise<void> {
  // TypeORM's QueryFailedError keeps better-sqlite3's error as driverError.
  const err = (thrown as { driverError?: unknown } | undefined)?.driverError ?? thrown;
  if (!(err instanceof BetterSqlite.SqliteError) || err.code !== 'SQLITE_ERROR') return;
  const rows = (await dataSource
    .query(
      `SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN (${IDPOOL_TABLES.map(() => '?').join(', ')})`,
      IDPOOL_TABLES,
    )
    .catch(() => [{ n: IDPOOL_TABLES.length }])) as { n: number | bigint }[];
  if (Number(rows[0]?.n) < IDPOOL_TABLES.length)
    Object.defineProperty(err, SCHEMA_MISSING, { value: true, configurable: true });
}

/** Extended result codes of their own, before their primary code (the part before the second `_`). */
const CODES: Record<string, Failure> = {
  SQLITE_CONSTRAINT_UNIQUE: failure('conflict', 'duplicate'),
  SQLITE_CONSTRAINT_PRIMARYKEY: failure('conflict', 'duplicate'),
  SQLITE_BUSY: failure('busy', 'lock_timeout'), // another connection holds the write lock past busy_timeout
  SQLITE_LOCKED: failure('busy', 'lock_timeout'),
  SQLITE_CONSTRAINT: failure('invalid', 'constraint'),
  SQLITE_TOOBIG: failure('invalid', 'out_of_range'),
  SQLITE_MISMATCH: failure('invalid', 'constraint'),
  SQLITE_READONLY: failure('unavailable', 'read_only'),
  SQLITE_FULL: failure('unavailable', 'disk'),
  SQLITE_IOERR: failure('unavailable', 'disk'),
  SQLITE_CANTOPEN: failure('unavailable', 'disk'),
  SQLITE_CORRUPT: failure('unavailable', 'disk'),
  SQLITE_NOTADB: failure('unavailable', 'disk'),
  SQLITE_NOMEM: failure('unavailable', 'out_of_memory'),
  SQLITE_PERM: failure('unavailable', 'auth'),
  SQLITE_AUTH: failure('unavailable', 'auth'),
};

/** better-sqlite3's `SqliteError` by its (extended) result code; a missing table as {@link markIfSchemaMissing} marked it. */
export const classifySqliteError: Classifier = (err) => {
  if (!(err instanceof BetterSqlite.SqliteError)) return undefined;
  if ((err as { [SCHEMA_MISSING]?: true })[SCHEMA_MISSING]) return failure('unavailable', 'database_schema');
  const primary = err.code.split('_', 2).join('_');
  if (Object.hasOwn(CODES, err.code)) return CODES[err.code];
  return Object.hasOwn(CODES, primary) ? CODES[primary] : failure('bug', 'other');
};
