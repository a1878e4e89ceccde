import { DataSource, type DataSourceOptions } from 'typeorm';
import { type Clock, systemClock } from '../clock';
import { migrations } from '../../migrations';
import { DIALECTS, type DialectName, type SqlDialect, dialectFor } from './dialects';
import { DatabaseStartError } from './start-error';

export {
  POSTGRES_STATEMENT_TIMEOUT_MS,
  isPostgresUrl,
  postgresUnavailable,
  toPostgresPlaceholders,
} from './dialects/postgres';
export { isBusy, whileBusy } from './dialects/sqlite';

/**
 * The relational store behind idpool: a TypeORM DataSource plus the few
 * dialect differences the SQL needs. BIGINT values cross this boundary as
 * decimal strings (never JS numbers) so offsets above 2^53 stay exact.
 */
export interface Database extends Pick<SqlDialect, 'bigText' | 'nowMs'> {
  readonly dialect: DialectName;
  readonly dataSource: DataSource;
  /** Where the data lives, for the start-up log (path or host/db, no password). */
  readonly description: string;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a statement and returns its affected-row count. */
  execute(sql: string, params?: unknown[]): Promise<{ affectedRows: number; insertId?: string }>;
  close(): Promise<void>;
}

/** TypeORM options for a database URL, with idpool's migrations (also the TypeORM CLI's, see ormconfig.ts). */
export function dataSourceOptions(url: string, clock: Clock = systemClock): DataSourceOptions {
  return { ...dialectFor(url).options(url, clock), migrations };
}

/**
 * Opens the database, creating the SQLite folder, MySQL schema or PostgreSQL
 * database if needed, and runs migrations. A failure to connect is a
 * {@link DatabaseStartError} naming the database and `urlSource`, where its
 * URL came from (the variable or option).
 */
export async function openDatabase(
  url: string,
  options: { migrate?: boolean; clock?: Clock; urlSource?: string } = {},
): Promise<Database> {
  const dialect = dialectFor(url);
  const description = dialect.describe(url);
  const dataSource = new DataSource(dataSourceOptions(url, options.clock));
  try {
    await dialect.createIfMissing(url);
    await dataSource.initialize();
    await dialect.afterConnect?.(dataSource);
  } catch (err) {
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw new DatabaseStartError(description, options.urlSource ?? 'the database URL', err);
  }
  const db = wrap(dataSource, dialect, description);
  if (options.migrate !== false) await migrate(db, options.clock);
  return db;
}

/**
 * Runs pending migrations. Several instances starting at once on a fresh
 * database would race to create the same tables, so they take turns under
 * the dialect's migration lock.
 */
export async function migrate(
  { dataSource, dialect }: Pick<Database, 'dataSource' | 'dialect'>,
  clock: Clock = systemClock,
): Promise<string[]> {
  const run = async () => (await dataSource.runMigrations({ transaction: 'each' })).map((m) => m.name);
  return DIALECTS[dialect].withMigrationLock(dataSource, run, clock);
}

function wrap(dataSource: DataSource, dialect: SqlDialect, description: string): Database {
  return {
    dialect: dialect.name,
    dataSource,
    description,
    query: <T>(sql: string, params?: unknown[]) => dialect.rows(dataSource, sql, params) as Promise<T[]>,
    async execute(sql, params) {
      const { affectedRows, insertId } = await dialect.statement(dataSource, sql, params);
      return { affectedRows, insertId };
    },
    bigText: (column) => dialect.bigText(column),
    nowMs: dialect.nowMs,
    close: () => dataSource.destroy(),
  };
}
