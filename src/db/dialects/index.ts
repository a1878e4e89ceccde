import type { DialectName, SqlDialect } from './dialect';
import { mysql } from './mysql';
import { postgres } from './postgres';
import { sqlite } from './sqlite';

export type { DialectName, SqlDialect } from './dialect';

/** Every supported database, by name. */
export const DIALECTS: Readonly<Record<DialectName, SqlDialect>> = { mysql, postgres, sqlite };

/** The dialect a database URL names; MySQL for anything that is neither SQLite nor PostgreSQL (the config accepts only these three). */
export function dialectFor(url: string): SqlDialect {
  return [sqlite, postgres].find((d) => d.matches(url)) ?? mysql;
}
