/**
 * One database transaction at a time, in each dialect, for the gapless
 * ledger: the counter's UPDATE and the ledger's INSERT commit together or
 * not at all. idpool's other SQL runs one statement at a time on the
 * shared pool; only this folder opens transactions, so the helper is here.
 */
import BetterSqlite3 from 'better-sqlite3';
import type { QueryRunner } from 'typeorm';
import { type Clock, systemClock } from '../clock';
import { type Database, isBusy, toPostgresPlaceholders } from '../db/database';
import { UnavailableError } from '../errors';

/** A row as the drivers give it here: BIGINTs selected as text, other numbers as numbers. */
export type SqlRow = Record<string, string | number | null>;

/** A statement's rows, affected count and (MySQL) `LAST_INSERT_ID()`. */
export interface TxResult {
  readonly rows: SqlRow[];
  readonly affectedRows: number;
  readonly insertId?: string;
}

/** What a transaction's body may run: statements with `?` placeholders. */
export interface Tx {
  run(sql: string, params?: unknown[]): Promise<TxResult>;
}

export interface Transactions {
  /** Runs `body` in one transaction: committed when it resolves, rolled back when it throws (the throw passed on). */
  transaction<T>(body: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** How long a SQLite transaction keeps trying to take the file's write lock from another connection. */
const SQLITE_BUSY_WAIT_MS = 5000;
/** How long one attempt blocks the event loop on a locked SQLite file (as the dialect's busy_timeout). */
const SQLITE_BUSY_TIMEOUT_MS = 20;

/** The transactions of `db`; a SQLite database needs its file (`sqlitePath`): an in-memory one has no second connection. */
export function transactionsOf(db: Database, sqlitePath?: string, clock: Clock = systemClock): Transactions {
  if (db.dialect === 'sqlite') return new SqliteTransactions(sqlitePath, clock);
  return new RunnerTransactions(db);
}

/** MySQL/MariaDB and PostgreSQL: a query runner holds one pooled connection for the transaction. */
class RunnerTransactions implements Transactions {
  constructor(private readonly db: Database) {}

  async transaction<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
    const runner = this.db.dataSource.createQueryRunner();
    const postgres = this.db.dialect === 'postgres';
    const tx: Tx = { run: (sql, params) => runStatement(runner, postgres ? toPostgresPlaceholders(sql) : sql, params) };
    try {
      await runner.connect();
      await runner.startTransaction();
      let result: T;
      try {
        result = await body(tx);
      } catch (err) {
        // A connection that broke is released below; its transaction ends with it.
        await runner.rollbackTransaction().catch(() => undefined);
        throw err;
      }
      await runner.commitTransaction();
      return result;
    } finally {
      await runner.release();
    }
  }

  async close(): Promise<void> {
    // The pooled connections close with the database.
  }
}

async function runStatement(runner: QueryRunner, sql: string, params?: unknown[]): Promise<TxResult> {
  const result = (await runner.query(sql, params, true)) as {
    records?: unknown;
    affected?: number;
    raw?: { insertId?: number | string; affectedRows?: number };
  };
  const raw = Array.isArray(result.raw) ? undefined : result.raw;
  const rows = Array.isArray(result.records) ? (result.records as SqlRow[]) : [];
  return {
    rows,
    affectedRows: result.affected ?? raw?.affectedRows ?? 0,
    insertId: raw?.insertId === undefined ? undefined : String(raw.insertId),
  };
}

/**
 * SQLite: a connection of its own on the same file, used by one
 * transaction at a time. Not TypeORM's: better-sqlite3 gives a DataSource
 * one connection, and a statement another part of idpool sent between two
 * of this transaction's would join it (and go back with a rollback).
 * `BEGIN IMMEDIATE` takes the file's write lock at once; another process
 * holding it is waited for as the other stores wait, off the event loop.
 */
class SqliteTransactions implements Transactions {
  private connection: BetterSqlite3.Database | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly path: string | undefined,
    private readonly clock: Clock,
  ) {}

  transaction<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
    const turn = this.queue.then(() => this.once(body));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private open(): BetterSqlite3.Database {
    if (this.connection) return this.connection;
    if (!this.path)
      throw new UnavailableError(
        'a gapless series needs its database in a file (sqlite::memory: has no second connection)',
        60,
      );
    const connection = new BetterSqlite3(this.path);
    connection.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    connection.pragma('synchronous = FULL');
    // Big integers stay exact: sequences and times are read as BigInt, then as text.
    connection.defaultSafeIntegers(true);
    this.connection = connection;
    return connection;
  }

  private async once<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
    const connection = this.open();
    const deadline = this.clock.monotonic() + SQLITE_BUSY_WAIT_MS;
    for (;;) {
      try {
        connection.exec('BEGIN IMMEDIATE');
        break;
      } catch (err) {
        if (!isBusy(err) || this.clock.monotonic() > deadline) throw err;
        await this.clock.sleep(2 + Math.random() * 8);
      }
    }
    const tx: Tx = { run: async (sql, params) => sqliteStatement(connection, sql, params) };
    try {
      const result = await body(tx);
      connection.exec('COMMIT');
      return result;
    } catch (err) {
      if (connection.inTransaction) connection.exec('ROLLBACK');
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.queue;
    this.connection?.close();
    this.connection = undefined;
  }
}

function sqliteStatement(connection: BetterSqlite3.Database, sql: string, params: unknown[] = []): TxResult {
  const statement = connection.prepare(sql);
  if (statement.reader) {
    const rows = (statement.all(...params) as Record<string, string | number | bigint | null>[]).map(textBigInts);
    return { rows, affectedRows: rows.length };
  }
  const info = statement.run(...params);
  return { rows: [], affectedRows: info.changes };
}

/** Rows with BigInt values (safe integers mode) as decimal strings, as the other drivers give BIGINTs. */
function textBigInts(row: Record<string, string | number | bigint | null>): SqlRow {
  const out: SqlRow = {};
  for (const [k, v] of Object.entries(row)) out[k] = typeof v === 'bigint' ? v.toString() : v;
  return out;
}
