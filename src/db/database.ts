import { DataSource, type DataSourceOptions } from 'typeorm';
import { type Clock, systemClock } from '../clock';
import { migrations } from '../../migrations';
import type { DialectName, SqlDialect } from './dialects/dialect';
import { mysql } from './dialects/mysql';
import { isPostgresUrl, postgres } from './dialects/postgres';
import { sqlite } from './dialects/sqlite';
import { DatabaseStartError } from './start-error';

export {
  POSTGRES_STATEMENT_TIMEOUT_MS,
  isPostgresUrl,
  postgresUnavailable,
  toPostgresPlaceholders,
} from './dialects/postgres';
export { SQLITE_BUSY_TIMEOUT_MS, isBusy, whileBusy, whileRacing } from './dialects/sqlite';

const DIALECTS: Readonly<Record<DialectName, SqlDialect>> = { mysql, postgres, sqlite };

/** MySQL for anything that is neither SQLite nor PostgreSQL (the config accepts only these three). */
const dialectFor = (url: string) => (url.startsWith('sqlite:') ? sqlite : isPostgresUrl(url) ? postgres : mysql);

/** A TypeORM DataSource and the dialect differences the SQL needs; BIGINTs cross it as decimal strings, exact above 2^53. */
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

/** Opens (creating if needed) and migrates the database; a failure to connect names it and `urlSource` ({@link DatabaseStartError}). */
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
  const db: Database = {
    dialect: dialect.name,
    dataSource,
    description,
    query: <T>(sql: string, params?: unknown[]) => dialect.rows(dataSource, sql, params) as Promise<T[]>,
    execute: (sql, params) => dialect.statement(dataSource, sql, params),
    bigText: (column) => dialect.bigText(column),
    nowMs: dialect.nowMs,
    close: () => dataSource.destroy(),
  };
  if (options.migrate !== false) await migrate(db, options.clock);
  return db;
}

/** Runs pending migrations, under the dialect's lock: instances starting at once on a fresh database take turns. */
export async function migrate(
  { dataSource, dialect }: Pick<Database, 'dataSource' | 'dialect'>,
  clock: Clock = systemClock,
): Promise<string[]> {
  const run = async () => (await dataSource.runMigrations({ transaction: 'each' })).map((m) => m.name);
  return DIALECTS[dialect].withMigrationLock(dataSource, run, clock);
}
