/**
 * One database transaction at a time, in each dialect, for the gapless
 * ledger: the counter's UPDATE and the ledger's INSERT commit together or
 * not at all. idpool's other SQL runs one statement at a time on the
 * shared pool; only this folder opens transactions, so the helper is here.
 */
import BetterSqlite3 from 'better-sqlite3';
import type mysql2 from 'mysql2';
import type { QueryRunner } from 'typeorm';
import { type Clock, systemClock } from '../clock';
import { type Database, SQLITE_BUSY_TIMEOUT_MS, toPostgresPlaceholders, whileBusy } from '../db/database';
import { boundedMysqlDriver } from '../db/mysql-driver';
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

/** A statement with `?` placeholders and its values. */
export interface Statement {
  readonly sql: string;
  readonly params: unknown[];
}

export interface Transactions {
  /** Runs `body` in one transaction: committed when it resolves, rolled back when it throws (the throw passed on). */
  transaction<T>(body: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Runs `statements` as one transaction sent in one round trip, each
   * statement's result in order; throws (the transaction rolled back) when
   * one fails. MySQL/MariaDB: any number of statements (a connection of
   * its own that allows several in one query); PostgreSQL: one statement,
   * its own transaction; SQLite: absent (a statement there costs no trip).
   */
  readonly inOneTrip?: (statements: Statement[]) => Promise<TxResult[]>;
  close(): Promise<void>;
}

/** The transactions of `db`; a SQLite database needs its file (`sqlitePath`): an in-memory one has no second connection. */
export function transactionsOf(db: Database, sqlitePath?: string, clock: Clock = systemClock): Transactions {
  if (db.dialect === 'sqlite') return new SqliteTransactions(sqlitePath, clock);
  if (db.dialect === 'mysql') return new MysqlTransactions(db);
  return new PostgresTransactions(db);
}

/** MySQL/MariaDB and PostgreSQL: a query runner holds one pooled connection for the transaction. */
class RunnerTransactions implements Transactions {
  constructor(protected readonly db: Database) {}

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

/** PostgreSQL: one statement outside an explicit transaction is one (a data-modifying CTE writes two tables at once). */
class PostgresTransactions extends RunnerTransactions {
  readonly inOneTrip = async (statements: Statement[]): Promise<TxResult[]> => {
    if (statements.length !== 1) throw new Error('PostgreSQL sends one statement a trip');
    const [{ sql, params }] = statements;
    const runner = this.db.dataSource.createQueryRunner();
    try {
      return [await runStatement(runner, toPostgresPlaceholders(sql), params)];
    } finally {
      await runner.release();
    }
  };
}

/**
 * Connections of the one-trip transactions, beside the shared pool's ten:
 * an entity's trips go one at a time per instance (series.ts), so four
 * serve four busy series at once and queue the rest (each trip ~1 ms plus
 * the commit's flush).
 */
const MYSQL_ONE_TRIP_CONNECTIONS = 4;

/**
 * MySQL/MariaDB: `START TRANSACTION; …; COMMIT` in one query, on a pool of
 * its own whose connections allow several statements in one (the shared
 * pool's do not). Values are escaped by mysql2 as on every other query;
 * statements are bounded as the shared pool's are (db/mysql-driver.ts).
 */
class MysqlTransactions extends RunnerTransactions {
  private pool: mysql2.Pool | undefined;

  readonly inOneTrip = async (statements: Statement[]): Promise<TxResult[]> => {
    const connection = await new Promise<mysql2.PoolConnection>((resolve, reject) =>
      this.oneTripPool().getConnection((err, c) => (err ? reject(err) : resolve(c))),
    );
    const sql = ['START TRANSACTION', ...statements.map((s) => s.sql), 'COMMIT'].join(';\n');
    let results: (mysql2.ResultSetHeader | SqlRow[])[];
    try {
      results = await new Promise((resolve, reject) =>
        connection.query(
          sql,
          statements.flatMap((s) => s.params),
          (err, res) => (err ? reject(err) : resolve(res as (mysql2.ResultSetHeader | SqlRow[])[])),
        ),
      );
    } catch (err) {
      // A statement failed: the ones before it are in a transaction still open. A dropped connection ended its own.
      if ((err as { fatal?: boolean }).fatal) connection.destroy();
      else {
        await new Promise((resolve) => connection.query('ROLLBACK', resolve));
        connection.release();
      }
      throw err;
    }
    connection.release();
    // START TRANSACTION's and COMMIT's results left out.
    return results
      .slice(1, -1)
      .map((r) =>
        Array.isArray(r)
          ? { rows: r, affectedRows: r.length }
          : { rows: [], affectedRows: r.affectedRows, insertId: String(r.insertId) },
      );
  };

  private oneTripPool(): mysql2.Pool {
    if (this.pool) return this.pool;
    const { url } = this.db.dataSource.options as { url?: string };
    this.pool = boundedMysqlDriver().createPool({
      uri: url,
      multipleStatements: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      connectionLimit: MYSQL_ONE_TRIP_CONNECTIONS,
      connectTimeout: 3000,
      enableKeepAlive: true,
      keepAliveInitialDelay: 5000,
      trace: false,
    });
    return this.pool;
  }

  override async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await new Promise((resolve) => pool.end(resolve));
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
    await whileBusy(async () => connection.exec('BEGIN IMMEDIATE'), this.clock);
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
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));
}
