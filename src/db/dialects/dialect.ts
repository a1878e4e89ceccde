import type { DataSource, DataSourceOptions, QueryRunner } from 'typeorm';
import type { Clock } from '../../clock';

export type DialectName = 'mysql' | 'postgres' | 'sqlite';

/** Rows and affected count of one statement (TypeORM's structured result). */
export interface StatementResult {
  records: unknown[];
  affectedRows: number;
  insertId?: string;
}

/** Everything idpool does differently per database, one object per dialect: `db/database.ts` knows none by name. */
export interface SqlDialect {
  readonly name: DialectName;
  /** TypeORM options for `url` (migrations are added by the caller); `clock` times what the driver measures itself (a PostgreSQL connect's wait). */
  options(url: string, clock: Clock): DataSourceOptions;
  /** Where the data lives, for the start-up log (path or host/db, no password). */
  describe(url: string): string;
  /** Creates the SQLite folder, MySQL schema or PostgreSQL database when missing. */
  createIfMissing(url: string): Promise<void>;
  /** Session settings run once after connecting, where the driver's options cannot carry them. */
  afterConnect?(dataSource: DataSource): Promise<void>;
  /** Runs `run` (the pending migrations) while no other process migrates the same database. */
  withMigrationLock(dataSource: DataSource, run: () => Promise<string[]>, clock: Clock): Promise<string[]>;
  /** The rows of a query with `?` placeholders. */
  rows(dataSource: DataSource, sql: string, params?: unknown[]): Promise<unknown[]>;
  /** Runs one statement with `?` placeholders; dependency failures become `UnavailableError` where the dialect can tell. */
  statement(dataSource: DataSource, sql: string, params?: unknown[]): Promise<StatementResult>;
  /** SQL expression selecting a BIGINT column as text. */
  bigText(column: string): string;
  /** SQL expression for the database's own clock, in Unix milliseconds. */
  readonly nowMs: string;
}

/** Longest a starting process waits for another one's migrations. */
export const MIGRATION_LOCK_WAIT_MS = 60_000;

/** `use` on a query runner of its own (one connection), released after. */
export async function withRunner<T>(dataSource: DataSource, use: (runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = dataSource.createQueryRunner();
  try {
    return await use(runner);
  } finally {
    await runner.release();
  }
}

/** TypeORM's structured result through a fresh query runner, the same shape on SQLite and PostgreSQL. */
export function structuredQuery(dataSource: DataSource, sql: string, params?: unknown[]): Promise<StatementResult> {
  return withRunner(dataSource, async (runner) => {
    const result = await runner.query(sql, params, true);
    return { records: result.records, affectedRows: result.affected ?? 0 };
  });
}
