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
    expect(config.lease).toEqual(DEFAULTS.lease);
    expect(config.ops).toEqual(DEFAULTS.ops);
    expect(config.logLevel).toBe('info');
    expect(config.adminTokenGenerated).toBe(true);
    expect(config.workerMax).toBe(2 ** DEFAULTS.snowflake.workerBits - 1);
  });

  it.each([
    ['IDPOOL_DATABASE_URL', 'postgress://x'],
    ['IDPOOL_REDIS_URL', 'http://x'],
    ['IDPOOL_PORT', '65536'],
    ['IDPOOL_PORT', 'eighty'],
    ['IDPOOL_ADMIN_TOKEN', 'short'],
    ['IDPOOL_REFILL_INTERVAL_MS', '5'],
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
    ['IDPOOL_REQUEST_LOG', 'loud'],
    ['IDPOOL_LOG_LEVEL', 'loud'],
  ])('%s=%s is refused with one line naming the variable', (variable, value) => {
    const err = errorOf({ [variable]: value });
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable}: `)).toBe(true);
    expect(err.message).not.toContain('\n');
  });

  it('ranges that depend on another variable use its value', () => {
    expect(errorOf({ IDPOOL_CLUSTER_COUNT: '4', IDPOOL_CLUSTER_INDEX: '4' }).message).toContain('from 0 to 3');
    expect(errorOf({ IDPOOL_SNOWFLAKE_WORKER_BITS: '3', IDPOOL_WORKER_ID: '8' }).message).toContain('from 0 to 7');
    expect(errorOf({ IDPOOL_WORKER_MIN: '5', IDPOOL_WORKER_MAX: '4' }).variable).toBe('IDPOOL_WORKER_MAX');
    expect(loadConfig({ IDPOOL_WORKER_LEASE_TTL_MS: '3000', IDPOOL_WORKER_LEASE_MARGIN_MS: '1000' }).lease.heartbeatSeconds).toBe(1);
  });

  it('the webhook URL, which may carry a token, is never echoed', () => {
    expect(errorOf({ IDPOOL_ALERT_WEBHOOK_URL: 'not a url with secret-token' }).message).not.toContain('secret-token');
  });
});
