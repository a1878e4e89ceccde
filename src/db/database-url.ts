// Without drivers: config/ and the CLI read the default without loading TypeORM.

/** Where an embedded service or the library keeps its data when no URL is given. */
export const DEFAULT_SQLITE_PATH = './idpool.db';
/** The default database: a SQLite file in the working directory. */
export const DEFAULT_DATABASE_URL = `sqlite:${DEFAULT_SQLITE_PATH}`;

/** The file of a `sqlite:` URL (the default file for a bare `sqlite:`); undefined for another database or `:memory:`. */
export function sqliteFile(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const path = url.slice('sqlite:'.length) || DEFAULT_SQLITE_PATH;
  return path === ':memory:' ? undefined : path;
}
