import BetterSqlite from 'better-sqlite3';
import { type Classifier, type Failure, failure } from '../../failure';

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

/**
 * better-sqlite3: every SQLite failure is a `SqliteError` whose `code` is
 * SQLite's (extended) result code name. A missing table is plain
 * SQLITE_ERROR: SQLite gives it no code of its own (callers ask the schema).
 */
export const classifySqliteError: Classifier = (err) => {
  if (!(err instanceof BetterSqlite.SqliteError)) return undefined;
  const primary = err.code.split('_', 2).join('_');
  if (Object.hasOwn(CODES, err.code)) return CODES[err.code];
  return Object.hasOwn(CODES, primary) ? CODES[primary] : failure('bug', 'other');
};
