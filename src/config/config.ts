import { randomBytes } from 'node:crypto';

/** Invalid configuration: start-up stops with this one line. */
export class ConfigError extends Error {
  constructor(readonly variable: string, detail: string) {
    super(`${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

export type TimeUnit = 'ms' | 's' | 'min' | 'h' | 'd';

export interface SnowflakeSettings {
  timeUnit: TimeUnit;
  /** Epoch in Unix milliseconds. */
  epochMs: number;
  timestampBits: number;
  workerBits: number;
  reservedBits: number;
  reservedValue: number;
  timeBackInitial: 0 | 1;
}

export interface Config {
  databaseUrl: string;
  /** Unset means the in-process pool (embedded / single node). */
  redisUrl: string | undefined;
  port: number;
  adminToken: string;
  /** True when the admin token was generated at start-up (printed once). */
  adminTokenGenerated: boolean;
  refillIntervalMs: number;
  clusterCount: number;
  clusterIndex: number;
  snowflake: SnowflakeSettings;
  workerMin: number;
  workerMax: number;
  workerPreferSameCode: boolean;
  /** Fixed worker id: no lease. */
  workerId: number | undefined;
  // Hardening (issue 11).
  /** Bound of the in-process Idempotency-Key store, in bytes (IDPOOL_IDEMPOTENCY_MAX_MB). */
  idempotencyMaxBytes: number;
  /** Bearer token `/metrics` requires; unset = open (IDPOOL_METRICS_TOKEN). */
  metricsToken: string | undefined;
  /** pino level (IDPOOL_LOG_LEVEL). */
  logLevel: LogLevel;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function epoch(env: Env, name: string, fallback: string): number {
  const raw = env[name] || fallback;
  const ms = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new ConfigError(name, `must be an ISO date or Unix epoch milliseconds, got "${raw}"`);
  }
  return ms;
}

/** An optional bearer token: at least 16 characters, printable without spaces (it travels in a header). */
function token(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 16 || !/^[\x21-\x7e]+$/.test(raw)) throw new ConfigError(name, 'must be at least 16 printable characters without spaces');
  return raw;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

const TIME_UNITS: readonly TimeUnit[] = ['ms', 's', 'min', 'h', 'd'];

/**
 * Reads idpool's configuration from the environment (DESIGN.md
 * "Configuration"). Throws {@link ConfigError} naming the variable.
 * Layout bounds that depend on each other are checked by the snowflake
 * layout itself, which also names the variable.
 */
export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = env.IDPOOL_DATABASE_URL || 'sqlite:./idpool.db';
  if (!/^(mysql|mariadb):\/\//.test(databaseUrl) && !databaseUrl.startsWith('sqlite:')) {
    throw new ConfigError('IDPOOL_DATABASE_URL', `must be mysql://user:pass@host:3306/db or sqlite:PATH, got "${databaseUrl}"`);
  }
  const redisUrl = env.IDPOOL_REDIS_URL || undefined;
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError('IDPOOL_REDIS_URL', `must be redis://host:6379/0, got "${redisUrl}"`);
  }
  const timeUnit = (env.IDPOOL_SNOWFLAKE_TIME_UNIT || 'ms') as TimeUnit;
  if (!TIME_UNITS.includes(timeUnit)) {
    throw new ConfigError('IDPOOL_SNOWFLAKE_TIME_UNIT', `must be one of ${TIME_UNITS.join(', ')}, got "${timeUnit}"`);
  }
  const workerBits = integer(env, 'IDPOOL_SNOWFLAKE_WORKER_BITS', 10, 3, 10);
  const workerCap = 2 ** workerBits - 1;
  const clusterCount = integer(env, 'IDPOOL_CLUSTER_COUNT', 1, 1, 1024);
  const clusterIndex = integer(env, 'IDPOOL_CLUSTER_INDEX', 0, 0, clusterCount - 1);
  const workerMin = integer(env, 'IDPOOL_WORKER_MIN', 1, 0, workerCap);
  const workerMax = integer(env, 'IDPOOL_WORKER_MAX', workerCap, workerMin, workerCap);
  const fixedWorker = env.IDPOOL_WORKER_ID;
  const adminTokenGiven = env.IDPOOL_ADMIN_TOKEN;
  if (adminTokenGiven !== undefined && adminTokenGiven !== '' && adminTokenGiven.length < 16) {
    throw new ConfigError('IDPOOL_ADMIN_TOKEN', 'must be at least 16 characters');
  }
  const config: Config = {
    databaseUrl,
    redisUrl,
    port: integer(env, 'IDPOOL_PORT', 8080, 0, 65535),
    adminToken: adminTokenGiven || randomBytes(24).toString('base64url'),
    adminTokenGenerated: !adminTokenGiven,
    refillIntervalMs: integer(env, 'IDPOOL_REFILL_INTERVAL_MS', 100, 10, 60_000),
    clusterCount,
    clusterIndex,
    snowflake: {
      timeUnit,
      epochMs: epoch(env, 'IDPOOL_SNOWFLAKE_EPOCH', '2024-01-01T00:00:00Z'),
      timestampBits: integer(env, 'IDPOOL_SNOWFLAKE_TIMESTAMP_BITS', 41, 15, 55),
      workerBits,
      reservedBits: integer(env, 'IDPOOL_SNOWFLAKE_RESERVED_BITS', 0, 0, 5),
      reservedValue: integer(env, 'IDPOOL_SNOWFLAKE_RESERVED_VALUE', 0, 0, 31),
      timeBackInitial: integer(env, 'IDPOOL_SNOWFLAKE_TIMEBACK_INITIAL', 0, 0, 1) as 0 | 1,
    },
    workerMin,
    workerMax,
    workerPreferSameCode: boolean(env, 'IDPOOL_WORKER_PREFER_SAME_CODE', false),
    workerId: fixedWorker === undefined || fixedWorker === '' ? undefined : integer(env, 'IDPOOL_WORKER_ID', 0, 0, workerCap),
    // Hardening (issue 11).
    idempotencyMaxBytes: integer(env, 'IDPOOL_IDEMPOTENCY_MAX_MB', 64, 1, 65_536) * 1024 * 1024,
    metricsToken: token(env, 'IDPOOL_METRICS_TOKEN'),
    logLevel: oneOf(env, 'IDPOOL_LOG_LEVEL', LOG_LEVELS, 'info'),
  };
  // Hardening (issue 11): a fixed worker id has no exclusivity and no floor
  // from the lease, so two processes (or one restarted after a clock
  // rollback) can repeat snowflake ids. Only on an explicit opt-in.
  if (config.workerId !== undefined && !boolean(env, 'IDPOOL_WORKER_ID_UNSAFE', false)) {
    throw new ConfigError('IDPOOL_WORKER_ID', 'turns off the worker lease (no exclusivity between processes); unset it to lease a worker id from the database, or set IDPOOL_WORKER_ID_UNSAFE=1 to accept that risk');
  }
  return config;
}
