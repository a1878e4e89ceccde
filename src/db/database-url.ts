// Without drivers: config/ and the CLI read the default without loading TypeORM.

/** Where an embedded service or the library keeps its data when no URL is given. */
const DEFAULT_SQLITE_PATH = './idpool.db';
/** The default database: a SQLite file in the working directory. */
export const DEFAULT_DATABASE_URL = `sqlite:${DEFAULT_SQLITE_PATH}`;

/** The path of a `sqlite:` URL (`:memory:`, or the default file for a bare `sqlite:`). */
export const sqlitePath = (url: string) => url.slice('sqlite:'.length) || DEFAULT_SQLITE_PATH;

/** The file of a `sqlite:` URL; undefined for another database or `:memory:`. */
export function sqliteFile(url: string): string | undefined {
  const path = url.startsWith('sqlite:') ? sqlitePath(url) : undefined;
  return path === ':memory:' ? undefined : path;
}
