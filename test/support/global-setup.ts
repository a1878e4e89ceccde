/**
 * Vitest's globalSetup (vitest.config.mts): before any test file, creates
 * the `idpool_test` databases the suites connect through (MariaDB and
 * PostgreSQL) when they are missing, and names the run (IDPOOL_TEST_RUN,
 * inherited by every test file: createTestSchema() puts it in each schema's
 * name). After the last file it drops the schemas and databases carrying
 * its name (a test that died before its own drop leaves one) and nothing
 * else. The `idpool_test` databases stay, even when this run created them:
 * another run on the machine (a second checkout, CI) may have started
 * meanwhile and connects through them (dropping them failed such a run).
 * A service that is down is left alone here: the suites that need it say
 * which, with the command that starts it (services.ts).
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { Client as PgClient, escapeIdentifier } from 'pg';
import { openApiDocument } from '../../src/http/openapi';
import { startBuildingPreviousRelease } from './previous-release';
import { MYSQL_URL, OPENAPI_ENV, POSTGRES_URL, RUN_ENV, schemaPrefix, serverUrl } from './services';

const databaseOf = (url: string): string => decodeURIComponent(new URL(url).pathname.slice(1));

async function onMysql<T>(
  run: (c: Awaited<ReturnType<typeof createConnection>>) => Promise<T>,
): Promise<T | undefined> {
  let c: Awaited<ReturnType<typeof createConnection>>;
  try {
    c = await createConnection({ uri: serverUrl(MYSQL_URL), connectTimeout: 2000 });
  } catch {
    return undefined; // down: the suites that need it say so
  }
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

/** Connected to the server's `postgres` database: `idpool_test` may not exist yet. */
async function onPostgres<T>(run: (c: PgClient) => Promise<T>): Promise<T | undefined> {
  const u = new URL(POSTGRES_URL);
  u.pathname = '/postgres';
  const c = new PgClient({ connectionString: u.toString(), connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
  } catch {
    await c.end().catch(() => undefined);
    return undefined;
  }
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  const run = randomBytes(3).toString('hex');
  process.env[RUN_ENV] = run;
  // The document every answer is checked against (answer-check.ts), built once for the run rather than
  // once per test file (about a second each: the zod schemas turned into JSON Schema).
  const document = join(tmpdir(), `idpool-openapi-${run}.json`);
  writeFileSync(document, JSON.stringify(openApiDocument()));
  process.env[OPENAPI_ENV] = document;
  // A whole run (no file named) reaches the rolling upgrade at its end: its previous release builds meanwhile.
  const builder = wholeRun() ? startBuildingPreviousRelease() : undefined;
  const mysqlDb = databaseOf(MYSQL_URL);
  const pgDb = databaseOf(POSTGRES_URL);
  await onMysql((c) => c.query(`CREATE DATABASE IF NOT EXISTS \`${mysqlDb}\``));
  await onPostgres(async (c) => {
    const found = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [pgDb]);
    // Two runs starting together: the second's CREATE finds the first's.
    if (!found.rowCount) await c.query(`CREATE DATABASE ${escapeIdentifier(pgDb)}`).catch(() => undefined);
  });

  return async () => {
    rmSync(document, { force: true });
    builder?.kill();
    // `_` is LIKE's any-character: escaped, the pattern matches this run's names only.
    const ours = `${schemaPrefix(run)}%`.replace(/_/g, '\\_');
    await onMysql(async (c) => {
      const [rows] = await c.query(
        'SELECT schema_name AS name FROM information_schema.schemata WHERE schema_name LIKE ?',
        [ours],
      );
      for (const { name } of rows as { name: string }[]) await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
    });
    await onPostgres(async (c) => {
      const found = await c.query<{ name: string }>('SELECT datname AS name FROM pg_database WHERE datname LIKE $1', [
        ours,
      ]);
      for (const { name } of found.rows)
        await c.query(`DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`);
    });
  };
}

/** Whether vitest runs every file: no file or pattern named on its command line (`vitest run`, `npm test`). */
function wholeRun(): boolean {
  const args = process.argv.slice(process.argv.indexOf('run') + 1);
  return process.argv.includes('run') && args.every((a) => a.startsWith('-'));
}
