import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Redis from 'ioredis';
import { freePort, runToExit, startRedisServer } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';
import { MYSQL_URL, POSTGRES_URL } from '../support/services';

/** One bad value per variable the service reads (plus what it needs beside it to reach the check). */
const BAD: [variable: string, env: Record<string, string>][] = [
  ['IDPOOL_ADMIN_TOKEN', { IDPOOL_ADMIN_TOKEN: 'x'.repeat(31) }],
  ['IDPOOL_ADMIN_PORT', { IDPOOL_PORT: '8080', IDPOOL_ADMIN_PORT: '8080' }],
  ['IDPOOL_OPS_TOKEN', { IDPOOL_OPS_TOKEN: 'ops-token-shorter-than-32' }],
  ['IDPOOL_HTTP_HEADERS_TIMEOUT_MS', { IDPOOL_HTTP_HEADERS_TIMEOUT_MS: '0' }],
  [
    'IDPOOL_HTTP_REQUEST_TIMEOUT_MS',
    { IDPOOL_HTTP_HEADERS_TIMEOUT_MS: '5000', IDPOOL_HTTP_REQUEST_TIMEOUT_MS: '4000' },
  ],
  ['IDPOOL_HTTP_MAX_CONNECTIONS', { IDPOOL_HTTP_MAX_CONNECTIONS: 'many' }],
  ['IDPOOL_ALERT_DEDUPE_MS', { IDPOOL_ALERT_DEDUPE_MS: 'soon' }],
  ['IDPOOL_ALERT_HORIZON_DAYS', { IDPOOL_ALERT_HORIZON_DAYS: '0' }],
  ['IDPOOL_ALERT_POOL_DRY_SECONDS', { IDPOOL_ALERT_POOL_DRY_SECONDS: '-1' }],
  ['IDPOOL_ALERT_POOL_LOW_PERCENT', { IDPOOL_ALERT_POOL_LOW_PERCENT: '101' }],
  ['IDPOOL_ALERT_WEBHOOK_URL', { IDPOOL_ALERT_WEBHOOK_URL: 'ftp://alerts.example' }],
  ['IDPOOL_ALERT_WORKER_RANGE_PERCENT', { IDPOOL_ALERT_WORKER_RANGE_PERCENT: '0' }],
  ['IDPOOL_CLUSTER_COUNT', { IDPOOL_CLUSTER_COUNT: '0' }],
  ['IDPOOL_CLUSTER_INDEX', { IDPOOL_CLUSTER_INDEX: '5' }],
  ['IDPOOL_DATABASE_URL', { IDPOOL_DATABASE_URL: 'oracle://db.example/idpool' }],
  ['IDPOOL_IDEMPOTENCY_MAX_MB', { IDPOOL_IDEMPOTENCY_MAX_MB: '0' }],
  ['IDPOOL_LOG_LEVEL', { IDPOOL_LOG_LEVEL: 'loud' }],
  ['IDPOOL_MAX_CLOCK_SKEW_MS', { IDPOOL_MAX_CLOCK_SKEW_MS: 'x' }],
  ['IDPOOL_METRICS_TOKEN', { IDPOOL_METRICS_TOKEN: 'short' }],
  ['IDPOOL_METRICS_MAX_ENTITIES', { IDPOOL_METRICS_MAX_ENTITIES: 'all' }],
  ['IDPOOL_POOL_HORIZON_S', { IDPOOL_POOL_HORIZON_S: '0' }],
  ['IDPOOL_REDIS_SENTINELS', { IDPOOL_REDIS_SENTINELS: 'no-port-here' }],
  [
    'IDPOOL_REDIS_SENTINEL_MASTER',
    { IDPOOL_REDIS_SENTINELS: '127.0.0.1:26379', IDPOOL_REDIS_SENTINEL_MASTER: 'my master' },
  ],
  ['IDPOOL_REDIS_CLUSTER_NODES', { IDPOOL_REDIS_CLUSTER_NODES: '127.0.0.1:99999' }],
  ['IDPOOL_REDIS_USERNAME', { IDPOOL_REDIS_URL: 'redis://127.0.0.1:6379/0', IDPOOL_REDIS_USERNAME: 'idpool' }],
  ['IDPOOL_REDIS_PASSWORD', { IDPOOL_REDIS_URL: 'redis://127.0.0.1:6379/0', IDPOOL_REDIS_PASSWORD: 'secret' }],
  ['IDPOOL_OPS_HISTORY_MS', { IDPOOL_OPS_HISTORY_MS: '1' }],
  ['IDPOOL_OPS_RATE_WINDOW_MS', { IDPOOL_OPS_RATE_WINDOW_MS: '1' }],
  ['IDPOOL_OPS_PERIOD_RATE_WINDOW_MS', { IDPOOL_OPS_PERIOD_RATE_WINDOW_MS: '999' }],
  ['IDPOOL_OPS_SAMPLE_MS', { IDPOOL_OPS_SAMPLE_MS: '1' }],
  ['IDPOOL_INSTANCE_TTL_MS', { IDPOOL_INSTANCE_TTL_MS: '100' }],
  ['IDPOOL_PORT', { IDPOOL_PORT: '70000' }],
  ['IDPOOL_REDIS_URL', { IDPOOL_REDIS_URL: 'http://redis.example' }],
  ['IDPOOL_REDIS_SOCKET_TIMEOUT_MS', { IDPOOL_REDIS_SOCKET_TIMEOUT_MS: '50' }],
  ['IDPOOL_REDIS_KEY_PREFIX', { IDPOOL_REDIS_KEY_PREFIX: 'a{b}' }],
  ['IDPOOL_COMPAT', { IDPOOL_COMPAT: 'leaf,uidgen' }],
  ['IDPOOL_CLOCK_CHECK_MS', { IDPOOL_CLOCK_CHECK_MS: 'x' }],
  ['IDPOOL_LEAF_DATABASE_URL', { IDPOOL_LEAF_DATABASE_URL: 'oracle://db.example/leaf' }],
  ['IDPOOL_TINYID_DATABASE_URL', { IDPOOL_TINYID_DATABASE_URL: 'oracle://db.example/tinyid' }],
  ['IDPOOL_POD_INDEX', { IDPOOL_WORKER_ID: 'ordinal', IDPOOL_POD_INDEX: 'abc' }],
  ['IDPOOL_REGION', { IDPOOL_SNOWFLAKE_REGION_BITS: '1', IDPOOL_REGION: '5' }],
  ['IDPOOL_SNOWFLAKE_REGION_BITS', { IDPOOL_SNOWFLAKE_REGION_BITS: '9' }],
  ['IDPOOL_WORKER_ID_OFFSET', { IDPOOL_WORKER_ID_OFFSET: '5' }],
  ['IDPOOL_REFILL_INTERVAL_MS', { IDPOOL_REFILL_INTERVAL_MS: '1' }],
  ['IDPOOL_REFILL_LOCK_TTL_MS', { IDPOOL_REFILL_LOCK_TTL_MS: '99' }],
  ['IDPOOL_FENCE_CHECK_MS', { IDPOOL_FENCE_CHECK_MS: '50' }],
  ['IDPOOL_REQUEST_LOG', { IDPOOL_REQUEST_LOG: 'maybe' }],
  ['IDPOOL_REQUEST_LOG_SLOW_MS', { IDPOOL_REQUEST_LOG_SLOW_MS: 'soon' }],
  ['IDPOOL_SNOWFLAKE_EPOCH', { IDPOOL_SNOWFLAKE_EPOCH: 'yesterday' }],
  ['IDPOOL_SNOWFLAKE_MAX_WAIT_MS', { IDPOOL_SNOWFLAKE_MAX_WAIT_MS: '-5' }],
  ['IDPOOL_SNOWFLAKE_RESERVED_BITS', { IDPOOL_SNOWFLAKE_RESERVED_BITS: '9' }],
  ['IDPOOL_SNOWFLAKE_RESERVED_VALUE', { IDPOOL_SNOWFLAKE_RESERVED_VALUE: '99' }],
  ['IDPOOL_SNOWFLAKE_TIMEBACK_INITIAL', { IDPOOL_SNOWFLAKE_TIMEBACK_INITIAL: '2' }],
  ['IDPOOL_SNOWFLAKE_TIMESTAMP_BITS', { IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '99' }],
  ['IDPOOL_SNOWFLAKE_TIME_UNIT', { IDPOOL_SNOWFLAKE_TIME_UNIT: 'week' }],
  ['IDPOOL_SNOWFLAKE_WORKER_BITS', { IDPOOL_SNOWFLAKE_WORKER_BITS: '2' }],
  ['IDPOOL_WORKER_HEARTBEAT_SECONDS', { IDPOOL_WORKER_HEARTBEAT_SECONDS: '0' }],
  ['IDPOOL_WORKER_ID', { IDPOOL_WORKER_ID: 'abc', IDPOOL_WORKER_ID_UNSAFE: '1' }],
  ['IDPOOL_WORKER_ID_UNSAFE', { IDPOOL_WORKER_ID: '3', IDPOOL_WORKER_ID_UNSAFE: 'perhaps' }],
  ['IDPOOL_WORKER_LEASE_MARGIN_MS', { IDPOOL_WORKER_LEASE_MARGIN_MS: '-1' }],
  ['IDPOOL_WORKER_LEASE_TTL_MS', { IDPOOL_WORKER_LEASE_TTL_MS: '5' }],
  ['IDPOOL_WORKER_MAX', { IDPOOL_WORKER_MAX: '5000' }],
  ['IDPOOL_WORKER_MIN', { IDPOOL_WORKER_MIN: '-1' }],
  ['IDPOOL_WORKER_PREFER_SAME_CODE', { IDPOOL_WORKER_PREFER_SAME_CODE: 'sure' }],
];

/** Names of IDPOOL_* variables read by the service (not the CLI's IDPOOL_URL, not error codes). */
function variablesInSource(): string[] {
  const root = join(__dirname, '..', '..', 'src');
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (!['cli', 'client'].includes(name)) walk(path);
      } else if (name.endsWith('.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/['"`(](IDPOOL_[A-Z0-9_]*[A-Z0-9])['"`,)]/g))
          found.add(m[1]);
      }
    }
  };
  walk(root);
  for (const notAVariable of ['IDPOOL_SERVER_CHANGED', 'IDPOOL_BAD_COUNT', 'IDPOOL_URL']) found.delete(notAVariable);
  return [...found].sort();
}

describe('bad configuration ends in one line naming the variable (exit 2)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-bad-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('covers every IDPOOL_* variable the service reads', () => {
    const covered = new Set(BAD.map(([v]) => v));
    expect(variablesInSource().filter((v) => !covered.has(v))).toEqual([]);
  });

  it(`answers each of ${BAD.length} bad values with exit 2 and one line on stderr`, async () => {
    const failures: string[] = [];
    let next = 0;
    // Four at a time: each case is a process start (~0.6 s of CPU for the build, twice that through tsx).
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= BAD.length) return;
        const [variable, env] = BAD[i];
        const run = await runToExit({ IDPOOL_DATABASE_URL: `sqlite:${join(dir, `case-${i}.db`)}`, ...env }, 60_000);
        const lines = run.stderr.trim().split('\n');
        const ok =
          run.code === 2 &&
          lines.length === 1 &&
          lines[0].startsWith(`idpool: invalid configuration: ${variable}`) &&
          !/\n\s+at /.test(run.stdout);
        if (!ok) failures.push(`${variable}: exit ${run.code}, stderr ${JSON.stringify(run.stderr.slice(0, 300))}`);
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    expect(failures).toEqual([]);
  }, 300_000);
});

describe('a database URL never reaches an error line with its password', () => {
  const PASSWORD = 'hunter2-do-not-print';
  it.each([
    ['malformed (no //): a configuration error', `mysql:idpool:${PASSWORD}@db.example/idpool`, 2],
    ['malformed (no :): a configuration error', `mysql//idpool:${PASSWORD}@db.example/idpool`, 2],
    [
      'an unescaped @ in the password, unreachable: a start-up error',
      `mysql://idpool:${PASSWORD}@x@127.0.0.1:1/idpool`,
      1,
    ],
    ['PostgreSQL, unreachable: a start-up error', `postgres://idpool:${PASSWORD}@127.0.0.1:1/idpool`, 1],
  ])(
    '%s',
    async (_name, url, code) => {
      const run = await runToExit({ IDPOOL_DATABASE_URL: url }, 60_000);
      expect(run.code).toBe(code);
      expect(run.stderr).toMatch(
        code === 2 ? /^idpool: invalid configuration: IDPOOL_DATABASE_URL/ : /^idpool: cannot start: /,
      );
      expect(run.stderr + run.stdout).not.toContain(PASSWORD);
      expect(run.stderr + run.stdout).not.toContain('hunter2');
    },
    90_000,
  );
});

/** Each run ended with exit 1 and its case's one line on stderr, `secret` nowhere in what it printed. */
function expectStartErrors(
  runs: { code: number | null; stdout: string; stderr: string }[],
  cases: [name: string, unused: unknown, line: RegExp][],
  secret: string,
): void {
  runs.forEach((run, i) => {
    const [name, , line] = cases[i];
    expect({ name, code: run.code }, run.stderr + run.stdout).toEqual({ name, code: 1 });
    expect(run.stderr, name).toMatch(line);
    expect(run.stderr.trimEnd().split('\n'), name).toHaveLength(1);
    expect(run.stderr + run.stdout, name).not.toContain(secret);
  });
}

describe('a Redis that cannot be used at start-up is named, with its address and the cause (exit 1)', () => {
  const PASSWORD = 'hunter3-do-not-print';
  it('refused, a password needed, a wrong one, no Sentinel, no Cluster node: one line each, never the password', async () => {
    // One private redis-server that needs a password (set once it answers: the start waits for a PING); the
    // other cases need only a port nothing listens on.
    const locked = await startRedisServer('none');
    const admin = new Redis(locked.url);
    await admin.config('SET', 'requirepass', PASSWORD);
    admin.disconnect();
    const dir = mkdtempSync(join(tmpdir(), 'idpool-redis-start-'));
    try {
      const closed = await freePort();
      const cases: [name: string, env: Record<string, string>, line: RegExp][] = [
        [
          'refused',
          { IDPOOL_REDIS_URL: `redis://127.0.0.1:${closed}/0` },
          new RegExp(
            `^idpool: cannot start: Redis at 127\\.0\\.0\\.1:${closed} \\(IDPOOL_REDIS_URL\\): connection refused`,
          ),
        ],
        [
          'a password needed',
          { IDPOOL_REDIS_URL: `redis://127.0.0.1:${locked.port}/0` },
          /^idpool: cannot start: Redis at 127\.0\.0\.1:\d+ \(IDPOOL_REDIS_URL\): a password is needed/,
        ],
        [
          'a wrong password',
          { IDPOOL_REDIS_URL: `redis://:${PASSWORD}-not@127.0.0.1:${locked.port}/0` },
          /^idpool: cannot start: Redis at 127\.0\.0\.1:\d+ \(IDPOOL_REDIS_URL\): wrong password/,
        ],
        [
          'no Sentinel answers',
          { IDPOOL_REDIS_SENTINELS: `127.0.0.1:${closed}`, IDPOOL_REDIS_PASSWORD: PASSWORD },
          /^idpool: cannot start: Redis Sentinel master "mymaster" via 127\.0\.0\.1:\d+ \(IDPOOL_REDIS_SENTINELS\): no Sentinel answered/,
        ],
        [
          'no Cluster node answers',
          { IDPOOL_REDIS_CLUSTER_NODES: `127.0.0.1:${closed}` },
          /^idpool: cannot start: Redis Cluster via 127\.0\.0\.1:\d+ \(IDPOOL_REDIS_CLUSTER_NODES\): no Cluster node answered/,
        ],
      ];
      const runs = await Promise.all(
        cases.map(([, env], i) =>
          runToExit({ IDPOOL_DATABASE_URL: `sqlite:${join(dir, `redis-${i}.db`)}`, ...env }, 150_000),
        ),
      );
      expectStartErrors(runs, cases, 'hunter3');
    } finally {
      await locked.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

/** `url` with another user and password: the server answers, and refuses them. */
function withUnknownUser(url: string, password: string): string {
  const u = new URL(url);
  u.username = 'idpool_no_such_user';
  u.password = password;
  return u.toString();
}

describeWithServices(
  'a database that cannot be opened at start-up is named, with its address, the variable and the cause (exit 1)',
  { mysql: true, postgres: true },
  () => {
    const PASSWORD = 'hunter4-do-not-print';
    it('refused, a host not found, a user refused (MariaDB and PostgreSQL): one line each, never the password', async () => {
      const closed = await freePort();
      const mysql = new URL(MYSQL_URL);
      const postgres = new URL(POSTGRES_URL);
      const cases: [name: string, url: string, line: RegExp][] = [
        [
          'MariaDB refused',
          `mysql://idpool:${PASSWORD}@127.0.0.1:${closed}/idpool`,
          new RegExp(
            `^idpool: cannot start: database mysql 127\\.0\\.0\\.1:${closed}/idpool \\(IDPOOL_DATABASE_URL\\): connection refused: nothing listens there`,
          ),
        ],
        [
          'PostgreSQL refused',
          `postgres://idpool:${PASSWORD}@127.0.0.1:${closed}/idpool`,
          new RegExp(
            `^idpool: cannot start: database postgres 127\\.0\\.0\\.1:${closed}/idpool \\(IDPOOL_DATABASE_URL\\): connection refused: nothing listens there`,
          ),
        ],
        [
          'a host not found',
          `mysql://idpool:${PASSWORD}@no-such-host.invalid:3306/idpool`,
          /^idpool: cannot start: database mysql no-such-host\.invalid:3306\/idpool \(IDPOOL_DATABASE_URL\): host name not found/,
        ],
        [
          'MariaDB refuses the user',
          withUnknownUser(MYSQL_URL, PASSWORD),
          new RegExp(
            `^idpool: cannot start: database mysql ${mysql.hostname}:${mysql.port || 3306}${mysql.pathname} \\(IDPOOL_DATABASE_URL\\): access denied: check the user and password`,
          ),
        ],
        [
          'PostgreSQL refuses the user',
          withUnknownUser(POSTGRES_URL, PASSWORD),
          new RegExp(
            `^idpool: cannot start: database postgres ${postgres.hostname}:${postgres.port || 5432}${postgres.pathname} \\(IDPOOL_DATABASE_URL\\): access denied: check the user and password`,
          ),
        ],
      ];
      const runs = await Promise.all(cases.map(([, url]) => runToExit({ IDPOOL_DATABASE_URL: url }, 60_000)));
      expectStartErrors(runs, cases, 'hunter4');
    }, 120_000);
  },
);
