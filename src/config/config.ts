import { randomBytes } from 'node:crypto';
import { z } from 'zod';

/** Invalid configuration: start-up stops with this one line. */
export class ConfigError extends Error {
  constructor(readonly variable: string, detail: string) {
    super(`${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

export type TimeUnit = 'ms' | 's' | 'min' | 'h' | 'd';
const TIME_UNITS = ['ms', 's', 'min', 'h', 'd'] as const;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

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

/** Timing of worker leases (`worker/lease.ts`). */
export interface LeaseSettings {
  /** A lease not renewed for this long (database clock) may be taken by another instance. */
  ttlMs: number;
  /** The holder stops issuing this long before the TTL (its own monotonic clock), to cover drift and slow renewals. */
  marginMs: number;
  /** Heartbeat (renewal) period, whole seconds (node-cron's finest unit). */
  heartbeatSeconds: number;
  /** Start-up is refused when the local clock and the database's differ by more than this. */
  maxClockSkewMs: number;
}

/** Lease timing plus the snowflake generator's longest wait. */
export interface SnowflakeRuntimeSettings extends LeaseSettings {
  /** Longest wait for a request (second clock rollback, exhausted sequence) before 503 `unavailable`. */
  maxWaitMs: number;
}

/** Metrics, forecasts, alarms and request logs (README "Alarms"). */
export interface OpsConfig {
  /** POST alarms here as JSON; unset = log only. */
  alertWebhookUrl: string | undefined;
  /** A given alarm is posted at most once per this many ms. */
  alertDedupeMs: number;
  /** Forecasts due within this many days alarm. */
  alertHorizonDays: number;
  /** `forecast_pool_dry` when a pool would be empty within this many seconds. */
  alertPoolDrySeconds: number;
  /** `pool_low` below this percent of the low watermark. */
  alertPoolLowPercent: number;
  /** `worker_range_nearly_full` at this percent of worker ids leased. */
  alertWorkerRangePercent: number;
  /** Sampling period of pool sizes and offsets. */
  sampleMs: number;
  /** Forecast rates are averaged over this long. */
  rateWindowMs: number;
  /** Dashboard chart history. */
  historyMs: number;
  /** One log line per HTTP request. */
  requestLog: boolean;
  /** `/metrics` has per-entity series for at most this many entities (the busiest), totals for all. */
  metricsMaxEntities: number;
}

/** Where Redis is (DESIGN.md "Redis topologies"). */
export type RedisTopology =
  | { readonly kind: 'single'; readonly url: string }
  | {
      readonly kind: 'cluster';
      /** Seed nodes; the rest of the cluster is discovered from them. */
      readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>;
      /** Credentials for every node. */
      readonly username?: string;
      readonly password?: string;
    }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>;
      /** The monitored master's name (`sentinel monitor <name> …`). */
      readonly masterName: string;
      /** Credentials for the Sentinels and the Redis nodes they point to. */
      readonly username?: string;
      readonly password?: string;
    };

export interface Config {
  databaseUrl: string;
  /** Unset means the in-process pool (embedded / single node). */
  redis: RedisTopology | undefined;
  port: number;
  adminToken: string;
  /** True when the admin token was generated at start-up (printed once). */
  adminTokenGenerated: boolean;
  refillIntervalMs: number;
  /** Seconds of recent peak demand a pool holds (bounded by the entity's maxPoolSize). */
  poolHorizonSeconds: number;
  clusterCount: number;
  clusterIndex: number;
  snowflake: SnowflakeSettings;
  workerMin: number;
  workerMax: number;
  workerPreferSameCode: boolean;
  /** Fixed worker id: no lease. */
  workerId: number | undefined;
  /** The service accepts a fixed worker id only with this set (IDPOOL_WORKER_ID_UNSAFE). */
  workerIdUnsafe: boolean;
  lease: SnowflakeRuntimeSettings;
  ops: OpsConfig;
  logLevel: LogLevel;
  /** Bound of the in-process Idempotency-Key store, in bytes. */
  idempotencyMaxBytes: number;
  /** Bearer token `/metrics` requires; unset = open. */
  metricsToken: string | undefined;
}

/**
 * Every default in one place (DESIGN.md "Configuration"). Where a number is
 * tuned, the comment says where it comes from.
 */
export const DEFAULTS = {
  databaseUrl: 'sqlite:./idpool.db',
  redisSentinelMaster: 'mymaster',
  port: 8080,
  refillIntervalMs: 100,
  // The seed design's "one minute of supply", at the recent peak rate.
  poolHorizonSeconds: 60,
  clusterCount: 1,
  clusterIndex: 0,
  snowflake: {
    timeUnit: 'ms',
    epoch: '2024-01-01T00:00:00Z',
    timestampBits: 41,
    workerBits: 10,
    reservedBits: 0,
    reservedValue: 0,
    timeBackInitial: 0,
  },
  workerMin: 1,
  workerPreferSameCode: false,
  /**
   * A 15 s TTL renewed every 3 s survives four missed heartbeats; stopping
   * 3 s early leaves room for a slow UPDATE and clock drift. 1 s of skew is
   * far above what NTP-synced hosts show (a few ms) and far below the TTL.
   */
  lease: { ttlMs: 15_000, marginMs: 3_000, heartbeatSeconds: 3, maxClockSkewMs: 1_000, maxWaitMs: 1_000 },
  ops: {
    alertWebhookUrl: undefined,
    // Ten minutes: long enough that a flapping pool posts a handful of times
    // an hour, short enough that a condition that persists is re-announced.
    alertDedupeMs: 600_000,
    // Thirty days: time to plan a migration (new entity, wider layout).
    alertHorizonDays: 30,
    // Ten seconds: a database hiccup that long would exhaust the pool.
    alertPoolDrySeconds: 10,
    // Half the low watermark: the refiller normally tops up at the watermark
    // within one tick, so a pool this low means refills are failing or slow.
    alertPoolLowPercent: 50,
    alertWorkerRangePercent: 90,
    // One second: one LLEN pipeline and one SQL query a second per instance.
    sampleMs: 1000,
    rateWindowMs: 60_000,
    // Ten minutes of chart.
    historyMs: 600_000,
    requestLog: true,
    // 200 entities × ~15 per-entity series ≈ 3,000 series per instance: a
    // small share of what one Prometheus handles, whatever the entity count.
    metricsMaxEntities: 200,
  } satisfies OpsConfig as OpsConfig,
  logLevel: 'info',
  // 64 MiB of stored answers: ~20,000 batches of 1,000 ids at ~3 KB each.
  idempotencyMaxMb: 64,
} as const;

type Env = Record<string, string | undefined>;

/**
 * Reads one variable at a time through a zod schema, so every value gets
 * the same treatment and every error is one line naming its variable.
 * Variables read later may depend on earlier ones (a range's bounds).
 */
class EnvReader {
  constructor(private readonly env: Env) {}

  /** The raw value, or undefined when unset or empty. */
  raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  private parse<T>(name: string, schema: z.ZodType<T>, fallback: T, expected: string): T {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    const result = schema.safeParse(raw.trim());
    if (!result.success) throw new ConfigError(name, `must be ${expected}, got "${raw}"`);
    return result.data;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const schema = z
      .string()
      .regex(/^-?\d+$/)
      .transform(Number)
      .pipe(z.number().int().min(min).max(max));
    return this.parse(name, schema, fallback, `an integer from ${min} to ${max}`);
  }

  bool(name: string, fallback: boolean): boolean {
    const schema = z
      .string()
      .regex(/^(1|true|yes|on|0|false|no|off)$/i)
      .transform((v) => /^(1|true|yes|on)$/i.test(v));
    return this.parse(name, schema, fallback, 'true or false');
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    return this.parse(name, z.enum(values as [T, ...T[]]), fallback, `one of ${values.join(', ')}`);
  }

  /** An ISO date or Unix epoch milliseconds, as epoch ms. */
  epochMs(name: string, fallback: string): number {
    const schema = z
      .string()
      .transform((v) => (/^\d+$/.test(v) ? Number(v) : Date.parse(v)))
      .pipe(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER));
    return this.parse(name, schema, schema.parse(fallback), 'an ISO date or Unix epoch milliseconds');
  }

  /** An optional bearer token: at least 16 printable characters without spaces (it travels in a header). */
  token(name: string): string | undefined {
    const raw = this.raw(name);
    if (raw !== undefined && (raw.length < 16 || !/^[\x21-\x7e]+$/.test(raw))) throw new ConfigError(name, 'must be at least 16 printable characters without spaces');
    return raw;
  }

  /** A URL matching `pattern`; `expected` describes the form. */
  url(name: string, pattern: RegExp, expected: string): string | undefined {
    const raw = this.raw(name);
    if (raw !== undefined && !pattern.test(raw)) throw new ConfigError(name, `must be ${expected}, got "${raw}"`);
    return raw;
  }
}

/**
 * Reads idpool's whole configuration from the environment (DESIGN.md
 * "Configuration"): every `IDPOOL_*` variable of the service, parsed and
 * validated here and nowhere else. Throws {@link ConfigError} naming the
 * variable. Layout bounds that depend on each other are checked by the
 * snowflake layout itself, which also names the variable.
 */
export function loadConfig(env: Env = process.env): Config {
  const r = new EnvReader(env);
  const databaseUrl =
    r.url('IDPOOL_DATABASE_URL', /^(mysql|mariadb|postgres|postgresql):\/\/|^sqlite:/, 'mysql://user:pass@host:3306/db, postgres://user:pass@host:5432/db or sqlite:PATH') ?? DEFAULTS.databaseUrl;
  const redis = redisTopology(r);
  const sf = DEFAULTS.snowflake;
  const workerBits = r.int('IDPOOL_SNOWFLAKE_WORKER_BITS', sf.workerBits, 3, 10);
  const workerCap = 2 ** workerBits - 1;
  const clusterCount = r.int('IDPOOL_CLUSTER_COUNT', DEFAULTS.clusterCount, 1, 1024);
  const workerMin = r.int('IDPOOL_WORKER_MIN', DEFAULTS.workerMin, 0, workerCap);
  const adminToken = r.raw('IDPOOL_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) throw new ConfigError('IDPOOL_ADMIN_TOKEN', 'must be at least 16 characters');
  return {
    databaseUrl,
    redis,
    port: r.int('IDPOOL_PORT', DEFAULTS.port, 0, 65535),
    adminToken: adminToken ?? randomBytes(24).toString('base64url'),
    adminTokenGenerated: adminToken === undefined,
    refillIntervalMs: r.int('IDPOOL_REFILL_INTERVAL_MS', DEFAULTS.refillIntervalMs, 10, 60_000),
    poolHorizonSeconds: r.int('IDPOOL_POOL_HORIZON_S', DEFAULTS.poolHorizonSeconds, 1, 3600),
    clusterCount,
    clusterIndex: r.int('IDPOOL_CLUSTER_INDEX', DEFAULTS.clusterIndex, 0, clusterCount - 1),
    snowflake: {
      timeUnit: r.oneOf('IDPOOL_SNOWFLAKE_TIME_UNIT', TIME_UNITS, sf.timeUnit),
      epochMs: r.epochMs('IDPOOL_SNOWFLAKE_EPOCH', sf.epoch),
      timestampBits: r.int('IDPOOL_SNOWFLAKE_TIMESTAMP_BITS', sf.timestampBits, 15, 55),
      workerBits,
      reservedBits: r.int('IDPOOL_SNOWFLAKE_RESERVED_BITS', sf.reservedBits, 0, 5),
      reservedValue: r.int('IDPOOL_SNOWFLAKE_RESERVED_VALUE', sf.reservedValue, 0, 31),
      timeBackInitial: r.int('IDPOOL_SNOWFLAKE_TIMEBACK_INITIAL', sf.timeBackInitial, 0, 1) as 0 | 1,
    },
    workerMin,
    workerMax: r.int('IDPOOL_WORKER_MAX', workerCap, workerMin, workerCap),
    workerPreferSameCode: r.bool('IDPOOL_WORKER_PREFER_SAME_CODE', DEFAULTS.workerPreferSameCode),
    workerId: r.raw('IDPOOL_WORKER_ID') === undefined ? undefined : r.int('IDPOOL_WORKER_ID', 0, 0, workerCap),
    workerIdUnsafe: r.bool('IDPOOL_WORKER_ID_UNSAFE', false),
    lease: leaseSettings(r),
    ops: opsConfig(r),
    logLevel: r.oneOf('IDPOOL_LOG_LEVEL', LOG_LEVELS, DEFAULTS.logLevel),
    idempotencyMaxBytes: r.int('IDPOOL_IDEMPOTENCY_MAX_MB', DEFAULTS.idempotencyMaxMb, 1, 65_536) * 1024 * 1024,
    metricsToken: r.token('IDPOOL_METRICS_TOKEN'),
  };
}

/** `host:port` lists (IDPOOL_REDIS_SENTINELS, IDPOOL_REDIS_CLUSTER_NODES). */
function hostPorts(name: string, raw: string): Array<{ host: string; port: number }> {
  return raw.split(',').map((part) => {
    const m = /^\s*([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})\s*$/.exec(part);
    const port = Number(m?.[2]);
    if (!m || port < 1 || port > 65535) throw new ConfigError(name, `must be host:port[,host:port...], got "${raw}"`);
    return { host: m[1].replace(/^\[|\]$/g, ''), port };
  });
}

/** IDPOOL_REDIS_URL, IDPOOL_REDIS_SENTINELS (+ _SENTINEL_MASTER) or IDPOOL_REDIS_CLUSTER_NODES (+ _USERNAME, _PASSWORD): at most one topology. */
function redisTopology(r: EnvReader): RedisTopology | undefined {
  const given = ['IDPOOL_REDIS_URL', 'IDPOOL_REDIS_SENTINELS', 'IDPOOL_REDIS_CLUSTER_NODES'].filter((name) => r.raw(name) !== undefined);
  if (given.length > 1) throw new ConfigError(given[1], `set only one of ${given.join(', ')} (one Redis topology)`);
  const url = r.url('IDPOOL_REDIS_URL', /^rediss?:\/\/[^/]/, 'redis://host:6379/0');
  if (url) {
    // A URL carries its own credentials; two places for one password is one too many.
    for (const name of ['IDPOOL_REDIS_USERNAME', 'IDPOOL_REDIS_PASSWORD']) {
      if (r.raw(name) !== undefined) throw new ConfigError(name, 'is for IDPOOL_REDIS_SENTINELS and IDPOOL_REDIS_CLUSTER_NODES; with IDPOOL_REDIS_URL put the credentials in the URL (redis://user:pass@host:6379/0)');
    }
    return { kind: 'single', url };
  }
  const sentinels = r.raw('IDPOOL_REDIS_SENTINELS');
  if (sentinels) {
    const masterName = r.raw('IDPOOL_REDIS_SENTINEL_MASTER') ?? DEFAULTS.redisSentinelMaster;
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(masterName)) throw new ConfigError('IDPOOL_REDIS_SENTINEL_MASTER', `must be 1-64 of A-Z a-z 0-9 _ - ., got "${masterName}"`);
    const username = r.raw('IDPOOL_REDIS_USERNAME');
    const password = r.raw('IDPOOL_REDIS_PASSWORD');
    return { kind: 'sentinel', sentinels: hostPorts('IDPOOL_REDIS_SENTINELS', sentinels), masterName, username, password };
  }
  const nodes = r.raw('IDPOOL_REDIS_CLUSTER_NODES');
  if (nodes) {
    return { kind: 'cluster', nodes: hostPorts('IDPOOL_REDIS_CLUSTER_NODES', nodes), username: r.raw('IDPOOL_REDIS_USERNAME'), password: r.raw('IDPOOL_REDIS_PASSWORD') };
  }
  return undefined;
}

function leaseSettings(r: EnvReader): SnowflakeRuntimeSettings {
  const d = DEFAULTS.lease;
  const ttlMs = r.int('IDPOOL_WORKER_LEASE_TTL_MS', d.ttlMs, 3_000, 3_600_000);
  const marginMs = r.int('IDPOOL_WORKER_LEASE_MARGIN_MS', Math.min(d.marginMs, Math.floor(ttlMs / 5)), 0, ttlMs - 2_000);
  // At least two heartbeats must fit before the lease would lapse, so one slow or lost renewal is survived.
  const heartbeatMax = Math.min(59, Math.floor((ttlMs - marginMs) / 2000));
  return {
    ttlMs,
    marginMs,
    heartbeatSeconds: r.int('IDPOOL_WORKER_HEARTBEAT_SECONDS', Math.min(d.heartbeatSeconds, heartbeatMax), 1, heartbeatMax),
    maxClockSkewMs: r.int('IDPOOL_MAX_CLOCK_SKEW_MS', d.maxClockSkewMs, 0, 60_000),
    maxWaitMs: r.int('IDPOOL_SNOWFLAKE_MAX_WAIT_MS', d.maxWaitMs, 0, 60_000),
  };
}

function opsConfig(r: EnvReader): OpsConfig {
  const d = DEFAULTS.ops;
  const webhook = r.raw('IDPOOL_ALERT_WEBHOOK_URL');
  // The URL may carry a token: never echo it.
  if (webhook !== undefined && !(URL.canParse(webhook) && /^https?:$/.test(new URL(webhook).protocol))) {
    throw new ConfigError('IDPOOL_ALERT_WEBHOOK_URL', 'must be an http:// or https:// URL');
  }
  return {
    alertWebhookUrl: webhook,
    alertDedupeMs: r.int('IDPOOL_ALERT_DEDUPE_MS', d.alertDedupeMs, 0, 7 * 86_400_000),
    alertHorizonDays: r.int('IDPOOL_ALERT_HORIZON_DAYS', d.alertHorizonDays, 1, 36_500),
    alertPoolDrySeconds: r.int('IDPOOL_ALERT_POOL_DRY_SECONDS', d.alertPoolDrySeconds, 0, 86_400),
    alertPoolLowPercent: r.int('IDPOOL_ALERT_POOL_LOW_PERCENT', d.alertPoolLowPercent, 0, 100),
    alertWorkerRangePercent: r.int('IDPOOL_ALERT_WORKER_RANGE_PERCENT', d.alertWorkerRangePercent, 1, 100),
    sampleMs: r.int('IDPOOL_OPS_SAMPLE_MS', d.sampleMs, 50, 60_000),
    rateWindowMs: r.int('IDPOOL_OPS_RATE_WINDOW_MS', d.rateWindowMs, 1000, 3_600_000),
    historyMs: r.int('IDPOOL_OPS_HISTORY_MS', d.historyMs, 10_000, 3_600_000),
    requestLog: r.bool('IDPOOL_REQUEST_LOG', d.requestLog),
    metricsMaxEntities: r.int('IDPOOL_METRICS_MAX_ENTITIES', d.metricsMaxEntities, 0, 100_000),
  };
}
