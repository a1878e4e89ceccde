import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, loadConfig } from '../../src/config/config';

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`);
}

describe('config: every IDPOOL_* variable in one module', () => {
  it('defaults come from DEFAULTS when nothing is set', () => {
    const config = loadConfig({});
    expect(config.databaseUrl).toBe(DEFAULTS.databaseUrl);
    expect(config.port).toBe(DEFAULTS.port);
    expect(config.refillIntervalMs).toBe(DEFAULTS.refillIntervalMs);
    expect(config.refillLockTtlMs).toBe(1000);
    expect(config.fenceCheckMs).toBe(2000);
    expect(loadConfig({ IDPOOL_FENCE_CHECK_MS: '0' }).fenceCheckMs).toBe(0);
    expect(loadConfig({ IDPOOL_FENCE_CHECK_MS: '100' }).fenceCheckMs).toBe(100);
    expect(config.lease).toEqual(DEFAULTS.lease);
    expect(config.ops).toEqual(DEFAULTS.ops);
    expect(config.logLevel).toBe('info');
    expect(config.adminTokenGenerated).toBe(true);
    expect(config.workerMax).toBe(2 ** DEFAULTS.snowflake.workerBits - 1);
    expect(config.redisKeyPrefix).toBe('idpool');
    expect(loadConfig({ IDPOOL_REDIS_KEY_PREFIX: 'staging' }).redisKeyPrefix).toBe('staging');
  });

  it.each([
    ['IDPOOL_DATABASE_URL', 'postgress://x'],
    ['IDPOOL_REDIS_URL', 'http://x'],
    ['IDPOOL_REDIS_SOCKET_TIMEOUT_MS', '50'],
    ['IDPOOL_REDIS_SOCKET_TIMEOUT_MS', '3s'],
    ['IDPOOL_REDIS_KEY_PREFIX', 'a{b}'],
    ['IDPOOL_REDIS_KEY_PREFIX', 'two words'],
    ['IDPOOL_PORT', '65536'],
    ['IDPOOL_PORT', 'eighty'],
    ['IDPOOL_ADMIN_TOKEN', 'short'],
    ['IDPOOL_REFILL_INTERVAL_MS', '5'],
    ['IDPOOL_REFILL_LOCK_TTL_MS', '50'],
    ['IDPOOL_REFILL_LOCK_TTL_MS', '60001'],
    ['IDPOOL_FENCE_CHECK_MS', '99'],
    ['IDPOOL_FENCE_CHECK_MS', '600001'],
    ['IDPOOL_FENCE_CHECK_MS', '2s'],
    ['IDPOOL_CLUSTER_COUNT', '0'],
    ['IDPOOL_SNOWFLAKE_TIME_UNIT', 'week'],
    ['IDPOOL_SNOWFLAKE_EPOCH', 'yesterday'],
    ['IDPOOL_SNOWFLAKE_TIMESTAMP_BITS', '60'],
    ['IDPOOL_SNOWFLAKE_WORKER_BITS', '2'],
    ['IDPOOL_SNOWFLAKE_RESERVED_BITS', '6'],
    ['IDPOOL_SNOWFLAKE_RESERVED_VALUE', '-1'],
    ['IDPOOL_SNOWFLAKE_TIMEBACK_INITIAL', '2'],
    ['IDPOOL_WORKER_MIN', '1024'],
    ['IDPOOL_WORKER_PREFER_SAME_CODE', 'maybe'],
    ['IDPOOL_WORKER_ID', '1.5'],
    ['IDPOOL_WORKER_LEASE_TTL_MS', '100'],
    ['IDPOOL_MAX_CLOCK_SKEW_MS', 'x'],
    ['IDPOOL_SNOWFLAKE_MAX_WAIT_MS', '999999'],
    ['IDPOOL_ALERT_WEBHOOK_URL', 'ftp://example'],
    ['IDPOOL_ALERT_DEDUPE_MS', '-5'],
    ['IDPOOL_OPS_SAMPLE_MS', '10'],
    ['IDPOOL_INSTANCE_TTL_MS', '499'],
    ['IDPOOL_INSTANCE_TTL_MS', 'soon'],
    ['IDPOOL_REQUEST_LOG', 'loud'],
    ['IDPOOL_REQUEST_LOG', 'error'],
    ['IDPOOL_REQUEST_LOG_SLOW_MS', '-1'],
    ['IDPOOL_REQUEST_LOG_SLOW_MS', 'slow'],
    ['IDPOOL_LOG_LEVEL', 'loud'],
  ])('%s=%s is refused with one line naming the variable', (variable, value) => {
    const err = errorOf({ [variable]: value });
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable}: `)).toBe(true);
    expect(err.message).not.toContain('\n');
  });

  it('IDPOOL_REQUEST_LOG: errors by default, all / errors / off in any case, and 1/true, 0/false as all and off', () => {
    expect(loadConfig({}).ops).toMatchObject({ requestLog: 'errors', requestLogSlowMs: 250 });
    const mode = (v: string) => loadConfig({ IDPOOL_REQUEST_LOG: v }).ops.requestLog;
    expect(['all', 'ERRORS', 'Off', '1', 'true', '0', 'false'].map(mode)).toEqual([
      'all',
      'errors',
      'off',
      'all',
      'all',
      'off',
      'off',
    ]);
    expect(loadConfig({ IDPOOL_REQUEST_LOG_SLOW_MS: '40' }).ops.requestLogSlowMs).toBe(40);
    expect(errorOf({ IDPOOL_REQUEST_LOG: 'loud' }).message).toBe(
      'IDPOOL_REQUEST_LOG: must be all, errors or off, got "loud"',
    );
  });

  it('IDPOOL_COMPAT: off by default; leaf, tinyid or both, comma-separated; anything else named', () => {
    expect(loadConfig({}).compat).toEqual([]);
    expect(loadConfig({ IDPOOL_COMPAT: 'none' }).compat).toEqual([]);
    expect(loadConfig({ IDPOOL_COMPAT: 'leaf' }).compat).toEqual(['leaf']);
    expect(loadConfig({ IDPOOL_COMPAT: ' Leaf, tinyid ,leaf' }).compat).toEqual(['leaf', 'tinyid']);
    const err = errorOf({ IDPOOL_COMPAT: 'leaf,uid-generator' });
    expect(err.variable).toBe('IDPOOL_COMPAT');
    expect(err.message).toMatch(/leaf, tinyid/);
  });

  it('ranges that depend on another variable use its value', () => {
    expect(errorOf({ IDPOOL_CLUSTER_COUNT: '4', IDPOOL_CLUSTER_INDEX: '4' }).message).toContain('from 0 to 3');
    expect(errorOf({ IDPOOL_SNOWFLAKE_WORKER_BITS: '3', IDPOOL_WORKER_ID: '8' }).message).toContain('from 0 to 7');
    expect(errorOf({ IDPOOL_WORKER_MIN: '5', IDPOOL_WORKER_MAX: '4' }).variable).toBe('IDPOOL_WORKER_MAX');
    expect(
      loadConfig({ IDPOOL_WORKER_LEASE_TTL_MS: '3000', IDPOOL_WORKER_LEASE_MARGIN_MS: '1000' }).lease.heartbeatSeconds,
    ).toBe(1);
  });

  it('the snowflake layout is bounded by its own check (layout.ts), worded as config words every variable', () => {
    expect(errorOf({ IDPOOL_SNOWFLAKE_TIME_UNIT: 's', IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '30' }).message).toBe(
      'IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: must be an integer from 31 to 55 for time unit s, got "30"',
    );
    expect(errorOf({ IDPOOL_SNOWFLAKE_RESERVED_BITS: '1', IDPOOL_SNOWFLAKE_RESERVED_VALUE: '2' }).message).toBe(
      'IDPOOL_SNOWFLAKE_RESERVED_VALUE: must be an integer from 0 to 1 (it must fit 1 reserved bits), got "2"',
    );
    expect(errorOf({ IDPOOL_SNOWFLAKE_TIME_UNIT: 'week' }).message).toBe(
      'IDPOOL_SNOWFLAKE_TIME_UNIT: must be one of ms, s, min, h, d, got "week"',
    );
    expect(errorOf({ IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '50', IDPOOL_SNOWFLAKE_RESERVED_BITS: '2' }).message).toMatch(
      /^IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: leaves 0 sequence bits; .* at most 49, got "50"$/,
    );
    // Within the seconds' bounds, but beside the default 10 worker bits no sequence bit is left.
    expect(errorOf({ IDPOOL_SNOWFLAKE_TIME_UNIT: 's', IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '55' }).variable).toBe(
      'IDPOOL_SNOWFLAKE_TIMESTAMP_BITS',
    );
    expect(errorOf({ IDPOOL_SNOWFLAKE_EPOCH: '1960-01-01' }).message).toBe(
      'IDPOOL_SNOWFLAKE_EPOCH: must be a date at or after 1970-01-01, got "1960-01-01"',
    );
    expect(errorOf({ IDPOOL_SNOWFLAKE_WORKER_BITS: 'ten' }).message).toBe(
      'IDPOOL_SNOWFLAKE_WORKER_BITS: must be an integer, got "ten"',
    );
    expect(
      loadConfig({ IDPOOL_SNOWFLAKE_TIME_UNIT: 'd', IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '15' }).snowflake,
    ).toMatchObject({ timeUnit: 'd', timestampBits: 15 });
  });

  it('the webhook URL, which may carry a token, is never echoed', () => {
    expect(errorOf({ IDPOOL_ALERT_WEBHOOK_URL: 'not a url with secret-token' }).message).not.toContain('secret-token');
  });

  it('admin and ops tokens: at least 32 characters, not equal; the generated admin token satisfies the rule', () => {
    const generated = loadConfig({}).adminToken;
    expect(generated.length).toBeGreaterThanOrEqual(DEFAULTS.adminTokenMinLength);
    expect(loadConfig({ IDPOOL_ADMIN_TOKEN: generated }).adminToken).toBe(generated);
    expect(errorOf({ IDPOOL_ADMIN_TOKEN: 'x'.repeat(31) }).message).toBe(
      'IDPOOL_ADMIN_TOKEN: must be at least 32 printable characters without spaces (openssl rand -hex 24 makes one)',
    );
    expect(errorOf({ IDPOOL_ADMIN_TOKEN: `${'x'.repeat(20)} ${'y'.repeat(20)}` }).variable).toBe('IDPOOL_ADMIN_TOKEN');
    expect(errorOf({ IDPOOL_ADMIN_TOKEN: 'a'.repeat(32), IDPOOL_OPS_TOKEN: 'a'.repeat(32) }).variable).toBe(
      'IDPOOL_OPS_TOKEN',
    );
    expect(loadConfig({ IDPOOL_ADMIN_TOKEN: 'a'.repeat(32), IDPOOL_OPS_TOKEN: 'o'.repeat(32) }).opsToken).toBe(
      'o'.repeat(32),
    );
  });

  it('HTTP limits: seconds by default, the request timeout never below the headers timeout', () => {
    expect(loadConfig({}).http).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 2000 });
    expect(loadConfig({ IDPOOL_HTTP_HEADERS_TIMEOUT_MS: '45000' }).http.requestTimeoutMs).toBe(45_000);
    expect(errorOf({ IDPOOL_HTTP_HEADERS_TIMEOUT_MS: '5000', IDPOOL_HTTP_REQUEST_TIMEOUT_MS: '4000' }).variable).toBe(
      'IDPOOL_HTTP_REQUEST_TIMEOUT_MS',
    );
  });

  it.each([
    ['IDPOOL_DATABASE_URL', 'mysql:user:pa55word@db/x'],
    ['IDPOOL_DATABASE_URL', 'oracle://user:pa55@word@db/x'],
    ['IDPOOL_REDIS_URL', 'redis//:pa55word@host:6379'],
    ['IDPOOL_REDIS_SENTINELS', 'user:pa55word@host:26379'],
  ])('%s=%s: the error shows the value without its credentials', (variable, value) => {
    const message = errorOf({ [variable]: value }).message;
    expect(message).not.toContain('pa55');
    expect(message).toContain('***@');
  });
});
