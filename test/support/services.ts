import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import Redis from 'ioredis';
import { Client as PgClient, escapeIdentifier } from 'pg';
import { privateMariadbPossible } from './mariadb';
import { netnsUnavailable } from './netns';
import { redisAnswers } from './redis-ping';
import { existsSync } from 'node:fs';
import { LIBFAKETIME } from './processes';

/** MariaDB/MySQL the integration tests use (docs/design.md "Commands"). */
export const MYSQL_URL = process.env.IDPOOL_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/idpool_test';
/** PostgreSQL the integration tests use; its database is only where per-test databases are created from. */
export const POSTGRES_URL = process.env.IDPOOL_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/idpool_test';
export const REDIS_URL = process.env.IDPOOL_TEST_REDIS_URL || 'redis://127.0.0.1:6379/15';
const REQUIRED = process.env.IDPOOL_REQUIRE_SERVICES === '1';
/** Set by global-setup.ts for the whole run: every schema a test creates carries it, so the run drops exactly its own. */
export const RUN_ENV = 'IDPOOL_TEST_RUN';
/** The file holding this run's /openapi.json, written once by the global setup for answer-check.ts. */
export const OPENAPI_ENV = 'IDPOOL_TEST_OPENAPI';

/** The start of the name of every schema/database the run `run` creates. */
export function schemaPrefix(run = process.env[RUN_ENV] ?? 'norun'): string {
  return `idpool_t_${run}_`;
}

/** How each shared service is started on a Debian machine, as .ci/run does it: said when one does not answer. */
const START = {
  mysql: 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd',
  postgres: 'pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start',
  redis: 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no',
} as const;

async function reachable(check: () => Promise<void>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

export async function mysqlReachable(): Promise<boolean> {
  return reachable(async () => {
    const c = await createConnection({ uri: serverUrl(MYSQL_URL), connectTimeout: 2000 });
    await c.end();
  });
}

export async function postgresReachable(): Promise<boolean> {
  return reachable(async () => {
    const c = new PgClient({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
    try {
      await c.connect();
    } finally {
      await c.end().catch(() => undefined);
    }
  });
}

/** A SQL server the service can run on, besides SQLite (which needs no server). */
export type SqlServer = 'mysql' | 'postgres';

/**
 * The SQL servers every invariant suite runs on, for `describe.each`:
 * `name` titles the suite, `server` goes to {@link servicesAvailable} and
 * {@link createTestSchema}.
 */
export const SQL_SERVERS: readonly { name: string; server: SqlServer }[] = [
  { name: 'MariaDB', server: 'mysql' },
  { name: 'PostgreSQL', server: 'postgres' },
];

function redisReachable(): Promise<boolean> {
  return redisAnswers(REDIS_URL, 2000);
}

/** What a suite needs of the machine: the shared services it talks to, and the programs it starts itself. */
export interface ServiceNeeds {
  mysql?: boolean;
  postgres?: boolean;
  redis?: boolean;
  /** A MariaDB server of its own that it may freeze or kill (mariadbd installed, run as root: mariadb.ts). */
  privateMariadb?: boolean;
  /** Network namespaces and tc (root, iproute2: netns.ts). */
  netns?: boolean;
  /** `promtool` (Debian package prometheus). */
  promtool?: boolean;
  /** `prometheus` itself (Debian package prometheus). */
  prometheus?: boolean;
  /** `kubectl` (Debian package kubernetes-client), for `kubectl kustomize` only: no cluster. */
  kubectl?: boolean;
  /** libfaketime, to start an instance with its clock moved (Debian package faketime). */
  faketime?: boolean;
  /** `javac`/`java`, `python3` and `go`: the clients under clients/ (Debian packages default-jdk-headless, python3, golang-go). */
  clientToolchains?: boolean;
}

const installed = (program: string): boolean => spawnSync(program, ['--version'], { stdio: 'ignore' }).status === 0;

/** What is missing of `needs`, one phrase each. */
async function missingOf(needs: ServiceNeeds): Promise<string[]> {
  const missing: string[] = [];
  if (needs.mysql && !(await mysqlReachable()))
    missing.push(`MariaDB/MySQL at ${MYSQL_URL} unreachable (start it: ${START.mysql})`);
  if (needs.postgres && !(await postgresReachable()))
    missing.push(`PostgreSQL at ${POSTGRES_URL} unreachable (start it: ${START.postgres})`);
  if (needs.redis && !(await redisReachable()))
    missing.push(`Redis at ${REDIS_URL} unreachable (start it: ${START.redis})`);
  if (needs.privateMariadb && !privateMariadbPossible())
    missing.push('a private mariadbd cannot run (not installed or not root)');
  const netns = needs.netns ? netnsUnavailable() : undefined;
  if (netns) missing.push(`network namespaces unavailable (${netns})`);
  for (const program of ['promtool', 'prometheus'] as const)
    if (needs[program] && !installed(program)) missing.push(`${program} not installed (Debian package prometheus)`);
  if (needs.kubectl && spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status !== 0)
    missing.push('kubectl not installed (Debian package kubernetes-client)');
  if (needs.faketime && !existsSync(LIBFAKETIME)) missing.push(`libfaketime not installed (${LIBFAKETIME})`);
  if (needs.clientToolchains) {
    for (const [program, arg] of [
      ['javac', '-version'],
      ['java', '-version'],
      ['python3', '--version'],
      ['go', 'version'],
    ])
      if (spawnSync(program, [arg], { stdio: 'ignore' }).status !== 0)
        missing.push(`${program} not installed (clients/)`);
  }
  return missing;
}

/**
 * Whether the machine has what a suite needs. When it has not, the suite is
 * skipped with a loud line, unless IDPOOL_REQUIRE_SERVICES=1 (CI), where
 * that is a failure.
 */
export async function servicesAvailable(needs: ServiceNeeds): Promise<boolean> {
  const missing = await missingOf(needs);
  if (missing.length === 0) return true;
  const line = `!!! ${missing.join('; ')}`;
  if (REQUIRED) throw new Error(`${line} and IDPOOL_REQUIRE_SERVICES=1`);
  process.stderr.write(`\n${line}: SKIPPING these integration tests\n\n`);
  return false;
}

export function serverUrl(url: string): string {
  const u = new URL(url);
  u.pathname = '/';
  return u.toString();
}

export interface TestSchema {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh schema (MySQL) or database (PostgreSQL) of its own for one test; drop it when done. */
export async function createTestSchema(server: SqlServer = 'mysql'): Promise<TestSchema> {
  const name = `${schemaPrefix()}${randomBytes(5).toString('hex')}`;
  if (server === 'postgres') return createPostgresDatabase(name);
  const admin = await createConnection({ uri: serverUrl(MYSQL_URL) });
  await admin.query(`CREATE DATABASE \`${name}\``);
  await admin.end();
  const u = new URL(MYSQL_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    async drop() {
      const c = await createConnection({ uri: serverUrl(MYSQL_URL) });
      await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await c.end();
    },
  };
}

async function onPostgres<T>(run: (c: PgClient) => Promise<T>): Promise<T> {
  const c = new PgClient({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

async function createPostgresDatabase(name: string): Promise<TestSchema> {
  await onPostgres((c) => c.query(`CREATE DATABASE ${escapeIdentifier(name)}`));
  const u = new URL(POSTGRES_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    // FORCE ends the sessions a killed service process may have left behind.
    drop: () =>
      onPostgres((c) => c.query(`DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}

/** A Redis key prefix of its own for one test. */
export function testPrefix(): string {
  return `idpool-t-${randomBytes(4).toString('hex')}`;
}

/**
 * The shared Redis under a key prefix of its own: every test deployment has
 * a database of its own, and a second deployment on the same keys is refused
 * (redis/deployment-claim.ts).
 */
export function sharedRedisEnv(prefix = testPrefix()): { IDPOOL_REDIS_URL: string; IDPOOL_REDIS_KEY_PREFIX: string } {
  return { IDPOOL_REDIS_URL: REDIS_URL, IDPOOL_REDIS_KEY_PREFIX: prefix };
}

/** Calls of each command since the server started or its last `CONFIG RESETSTAT` (those run inside functions included), from `INFO commandstats`. */
export async function commandCalls(redis: Redis, ...commands: string[]): Promise<Record<string, number>> {
  const stats = await redis.info('commandstats');
  return Object.fromEntries(
    commands.map((c) => [c, Number(new RegExp(`^cmdstat_${c}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0)]),
  );
}

/** Deletes every key under a prefix. */
export async function clearPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}
