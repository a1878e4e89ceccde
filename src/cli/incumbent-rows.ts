/** Reading an incumbent's rows (Leaf's or Tinyid's table) from its own MySQL/MariaDB or PostgreSQL databases. */
import { CliError, EXIT_FAILURE, EXIT_USAGE, oneLine } from './errors';
import { type Incumbent, type IncumbentRow, mergeRows } from './import-from';

function urlKind(url: string): 'mysql' | 'postgres' {
  if (/^(mysql|mariadb):\/\//.test(url)) return 'mysql';
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgres';
  throw new CliError(EXIT_USAGE, '--database-url must be a mysql://, mariadb:// or postgres:// URL');
}

/** Where a URL points, without its password, for messages. */
function where(url: string): string {
  const u = URL.parse(url);
  return u ? `${u.host}${u.pathname}` : 'the database';
}

/** Runs `sql` on one database, every BIGINT as its decimal text; the driver loads here, so no other command loads it. */
async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  try {
    if (urlKind(url) === 'mysql') {
      const { createConnection } = await import('mysql2/promise');
      const c = await createConnection({
        uri: url.replace(/^mariadb:/, 'mysql:'),
        supportBigNumbers: true,
        bigNumberStrings: true,
        connectTimeout: 10_000,
      });
      try {
        return (await c.query(sql))[0] as Record<string, unknown>[];
      } finally {
        await c.end();
      }
    }
    const { Client: PgClient } = await import('pg');
    const c = new PgClient({ connectionString: url, connectionTimeoutMillis: 10_000 });
    await c.connect();
    try {
      return (await c.query(sql)).rows as Record<string, unknown>[];
    } finally {
      await c.end();
    }
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(EXIT_FAILURE, `cannot read ${where(url)}: ${oneLine((err as Error).message)}`);
  }
}

const int = (v: unknown, fallback: number): number => (v === null || v === undefined ? fallback : Number(v));

/** Every row of the incumbent's table in one database (as the incumbents' own DDL defines them). */
async function readRows(kind: Incumbent, url: string): Promise<IncumbentRow[]> {
  // max_id as text: a BIGINT past 2^53 must not pass through a JS number.
  const maxId = `CAST(max_id AS ${urlKind(url) === 'mysql' ? 'CHAR(20)' : 'VARCHAR(20)'}) AS max_id`;
  const leaf = kind === 'leaf';
  const rows = await query(
    url,
    leaf
      ? `SELECT biz_tag, ${maxId}, step, description FROM leaf_alloc`
      : `SELECT biz_type, ${maxId}, step, delta, remainder FROM tiny_id_info`,
  );
  const tokens = leaf ? [] : await query(url, 'SELECT token, biz_type FROM tiny_id_token');
  return rows.map((r) => {
    const key = String(leaf ? r.biz_tag : r.biz_type);
    return {
      key,
      maxId: BigInt(String(r.max_id)),
      step: int(r.step, 0),
      description: typeof r.description === 'string' ? r.description : null,
      delta: int(r.delta, 1),
      remainder: int(r.remainder, 0),
      tokens: tokens.filter((t) => String(t.biz_type) === key).map((t) => String(t.token)),
    };
  });
}

/** Every row of every database, merged (see {@link mergeRows}). */
export async function readAll(kind: Incumbent, urls: readonly string[]): Promise<IncumbentRow[]> {
  const sets: IncumbentRow[][] = [];
  for (const url of urls) sets.push(await readRows(kind, url));
  return mergeRows(sets);
}
