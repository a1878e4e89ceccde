/** Every IDPOOL_* variable of the service read once onto the types of the folders that own them (the README's table); the CLI reads its own (IDPOOL_URL, IDPOOL_SECRET) in cli/. */
import { randomBytes } from 'node:crypto';
import { DEFAULT_DATABASE_URL } from '../db/database-url';
import { BOOLEAN_WORDS, type Env, EnvReader, quoted } from './env-reader';
import { redisTopology } from './redis-env';
import { fixedWorkerId, podWorker } from './worker-env';
import { ConfigError } from '../errors';
import { REDIS_SOCKET_TIMEOUT_MS, type RedisTopology } from '../redis/topology';
import {
  DEFAULT_SETTINGS as SNOWFLAKE_DEFAULTS,
  type SnowflakeSettings,
  type TimeUnit,
  settingsProblem,
} from '../snowflake/layout';
import { DEFAULT_MAX_WAIT_MS } from '../snowflake/snowflake';
import { DEFAULT_LEASE } from '../worker/lease';
import type { SnowflakeRuntimeSettings } from '../worker/snowflake-lease';
import { DEFAULT_CLOCK_CHECK_MS } from '../worker/clock-watch';
import type { PodWorker } from '../worker/pod-worker';
import { DEFAULT_IDEMPOTENCY_MAX_MB } from '../idempotency/memory-store';
import { DEFAULT_OPS, type OpsConfig, type RequestLogMode } from '../ops/settings';
import { DEFAULT_PREFIX, PREFIX_PATTERN } from '../redis/keys';
import {
  COMPAT_ROUTES,
  type CompatRoute,
  DEFAULT_HTTP_SERVER,
  type HttpServerSettings,
  SERVICE_TOKEN_MIN_LENGTH,
} from '../http/settings';

export { ConfigError };

/** The variable naming the database, for the errors of a start that cannot open it. */
export const DATABASE_URL_VARIABLE = 'IDPOOL_DATABASE_URL';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  databaseUrl: string;
  /** Leaf's and Tinyid's databases, for entities in a live cutover (docs/migrating.md). */
  incumbentUrls: { leaf?: string; tinyid?: string };
  /** Unset means the in-process pool (embedded / single node). */
  redis: RedisTopology | undefined;
  /** A Redis connection with commands pending and no reply for this long is dropped and re-opened. */
  redisSocketTimeoutMs: number;
  /** Starts every Redis key: two deployments may share one Redis database under two prefixes. */
  redisKeyPrefix: string;
  port: number;
  /** When set, `/admin/*` is served on this port only (`port` answers it 404), for a network policy to guard. */
  adminPort: number | undefined;
  adminToken: string;
  /** Generated at start-up (printed once). */
  adminTokenGenerated: boolean;
  refillIntervalMs: number;
  /** Every this long each entity's database offset is carried past its fence if behind; 0 = off. */
  fenceCheckMs: number;
  /** How long a dead refiller can block an entity (the lock is extended while its refill runs). */
  refillLockTtlMs: number;
  /** Seconds of recent peak demand a pool holds (bounded by the entity's maxPoolSize). */
  poolHorizonSeconds: number;
  /** This deployment's stride (`IdStride`, IDPOOL_CLUSTER_COUNT/INDEX): the n-th number becomes `n·count + index`. */
  strideCount: number;
  strideIndex: number;
  snowflake: SnowflakeSettings;
  workerMin: number;
  workerMax: number;
  workerPreferSameCode: boolean;
  /** Fixed worker id: no lease. */
  workerId: number | undefined;
  /** A fixed worker id is accepted only with this set. */
  workerIdUnsafe: boolean;
  /** IDPOOL_WORKER_ID=ordinal: the worker id the pod's ordinal names, leased. */
  podWorker: PodWorker | undefined;
  lease: SnowflakeRuntimeSettings;
  ops: OpsConfig;
  logLevel: LogLevel;
  /** Bound of the stored Idempotency-Key answers, in bytes; a quarter of it per entity. */
  idempotencyMaxBytes: number;
  /** Bearer token `/metrics` requires; unset = open. */
  metricsToken: string | undefined;
  /** Read-only operator token (dashboard, `GET /admin/*`, `/metrics`); unset = none. */
  opsToken: string | undefined;
  http: HttpServerSettings;
  /** Other protocols served besides idpool's own; none by default. */
  compat: readonly CompatRoute[];
}

/** Every default in one place (docs/design.md "Configuration"); a tuned number says where it comes from. */
export const DEFAULTS = {
  databaseUrl: DEFAULT_DATABASE_URL,
  port: 8080,
  refillIntervalMs: 100,
  /**
   * Renewed every quarter while a refill runs, so it bounds how long a dead holder blocks its entity (ids again
   * 0.7–1.0 s after a `kill -9`), not a refill. `npm run bench -- refill-lock` (MariaDB, 2 cores at load ~20): renewals
   * late by at most 0.93 s (monotonic 5M refill), 1.6 s (trend, 1M steps); a holder that late may lose the lock, and
   * the fence then refuses the older segment: no id twice.
   */
  refillLockTtlMs: 1000,
  // A database restored under full pools is carried past the fences within this (docs/ha.md "Restores and failovers").
  // A run at 10,000 entities cost 28 ms of CPU here under a load of 21 (bench/fence-check.bench.ts): ~1.4 % of a core at 2 s.
  fenceCheckMs: 2000,
  // One minute of supply at the recent peak rate (docs/design.md, "Pools are sized by demand").
  poolHorizonSeconds: 60,
  strideCount: 1,
  strideIndex: 0,
  snowflake: SNOWFLAKE_DEFAULTS,
  workerMin: 1,
  workerPreferSameCode: false,
  lease: {
    ...DEFAULT_LEASE,
    maxWaitMs: DEFAULT_MAX_WAIT_MS,
    clockCheckMs: DEFAULT_CLOCK_CHECK_MS,
  } satisfies SnowflakeRuntimeSettings as SnowflakeRuntimeSettings,
  ops: DEFAULT_OPS,
  logLevel: 'info',
  idempotencyMaxMb: DEFAULT_IDEMPOTENCY_MAX_MB,
  adminTokenMinLength: SERVICE_TOKEN_MIN_LENGTH,
  http: DEFAULT_HTTP_SERVER,
} as const;

// The boolean words (1/true/yes/on, 0/false/no) read as all and off.
const REQUEST_LOG_WORDS: Record<string, RequestLogMode> = Object.fromEntries([
  ...Object.entries(BOOLEAN_WORDS).map(([word, on]) => [word, on ? 'all' : 'off'] as const),
  ...(['all', 'errors', 'off'] as const).map((mode) => [mode, mode] as const),
]);

/** Every `IDPOOL_*` variable of the service, parsed and validated once (docs/design.md "Configuration"). */
export function loadConfig(env: Env = process.env): Config {
  const r = new EnvReader(env);
  const databaseUrl =
    r.url(
      DATABASE_URL_VARIABLE,
      /^(mysql|mariadb|postgres|postgresql):\/\/|^sqlite:/,
      'mysql://user:pass@host:3306/db, postgres://user:pass@host:5432/db or sqlite:PATH',
    ) ?? DEFAULTS.databaseUrl;
  const redis = redisTopology(r);
  const snowflake = snowflakeSettings(r);
  const workerCap = 2 ** snowflake.workerBits - 1;
  const strideCount = r.int('IDPOOL_CLUSTER_COUNT', DEFAULTS.strideCount, 1, 1024);
  const workerMin = r.int('IDPOOL_WORKER_MIN', DEFAULTS.workerMin, 0, workerCap);
  const adminToken = r.token('IDPOOL_ADMIN_TOKEN', DEFAULTS.adminTokenMinLength);
  const opsToken = r.token('IDPOOL_OPS_TOKEN', DEFAULTS.adminTokenMinLength);
  if (opsToken !== undefined && opsToken === adminToken)
    throw new ConfigError('IDPOOL_OPS_TOKEN', 'must differ from IDPOOL_ADMIN_TOKEN (it is the read-only one)');
  const incumbentUrl = (name: string) =>
    r.url(name, /^(mysql|mariadb|postgres|postgresql):\/\//, 'mysql://user:pass@host:3306/db or postgres://…');
  const port = r.int('IDPOOL_PORT', DEFAULTS.port, 0, 65535);
  const leaf = incumbentUrl('IDPOOL_LEAF_DATABASE_URL');
  const tinyid = incumbentUrl('IDPOOL_TINYID_DATABASE_URL');
  return {
    databaseUrl,
    incumbentUrls: { ...(leaf ? { leaf } : {}), ...(tinyid ? { tinyid } : {}) },
    redis,
    redisSocketTimeoutMs: r.int('IDPOOL_REDIS_SOCKET_TIMEOUT_MS', REDIS_SOCKET_TIMEOUT_MS, 100, 600_000),
    redisKeyPrefix:
      r.url('IDPOOL_REDIS_KEY_PREFIX', PREFIX_PATTERN, '1-64 of A-Z a-z 0-9 _ . : - (no braces)') ?? DEFAULT_PREFIX,
    port,
    adminPort: adminPort(r, port),
    // 32 random bytes: 43 base64url characters.
    adminToken: adminToken ?? randomBytes(32).toString('base64url'),
    adminTokenGenerated: adminToken === undefined,
    refillIntervalMs: r.int('IDPOOL_REFILL_INTERVAL_MS', DEFAULTS.refillIntervalMs, 10, 60_000),
    fenceCheckMs: fenceCheckMs(r),
    // Renewed every quarter lease: below 100 ms a busy event loop misses renewals; beyond a minute an entity waits out a dead refiller that long.
    refillLockTtlMs: r.int('IDPOOL_REFILL_LOCK_TTL_MS', DEFAULTS.refillLockTtlMs, 100, 60_000),
    poolHorizonSeconds: r.int('IDPOOL_POOL_HORIZON_S', DEFAULTS.poolHorizonSeconds, 1, 3600),
    strideCount,
    strideIndex: r.int('IDPOOL_CLUSTER_INDEX', DEFAULTS.strideIndex, 0, strideCount - 1),
    snowflake,
    workerMin,
    workerMax: r.int('IDPOOL_WORKER_MAX', workerCap, workerMin, workerCap),
    workerPreferSameCode: r.bool('IDPOOL_WORKER_PREFER_SAME_CODE', DEFAULTS.workerPreferSameCode),
    workerId: fixedWorkerId(r, workerCap),
    workerIdUnsafe: r.bool('IDPOOL_WORKER_ID_UNSAFE', false),
    podWorker: podWorker(r, workerCap),
    lease: leaseSettings(r),
    ops: opsConfig(r),
    logLevel: r.oneOf('IDPOOL_LOG_LEVEL', LOG_LEVELS, DEFAULTS.logLevel),
    idempotencyMaxBytes: r.int('IDPOOL_IDEMPOTENCY_MAX_MB', DEFAULTS.idempotencyMaxMb, 1, 65_536) * 1024 * 1024,
    metricsToken: r.token('IDPOOL_METRICS_TOKEN'),
    opsToken,
    http: httpServerSettings(r),
    compat: compatRoutes(r),
  };
}

// Bounded by the layout's own check, which needs no clock (the epoch against now is checked when the service builds the layout).
function snowflakeSettings(r: EnvReader): SnowflakeSettings {
  const sf = DEFAULTS.snowflake;
  const settings: SnowflakeSettings = {
    timeUnit: (r.raw('IDPOOL_SNOWFLAKE_TIME_UNIT')?.trim() ?? sf.timeUnit) as TimeUnit,
    epochMs: r.epochMs('IDPOOL_SNOWFLAKE_EPOCH', sf.epochMs),
    timestampBits: r.int('IDPOOL_SNOWFLAKE_TIMESTAMP_BITS', sf.timestampBits),
    workerBits: r.int('IDPOOL_SNOWFLAKE_WORKER_BITS', sf.workerBits),
    reservedBits: r.int('IDPOOL_SNOWFLAKE_RESERVED_BITS', sf.reservedBits),
    reservedValue: r.int('IDPOOL_SNOWFLAKE_RESERVED_VALUE', sf.reservedValue),
    timeBackInitial: r.int('IDPOOL_SNOWFLAKE_TIMEBACK_INITIAL', sf.timeBackInitial) as 0 | 1,
    regionBits: r.int('IDPOOL_SNOWFLAKE_REGION_BITS', sf.regionBits),
    region: r.int('IDPOOL_REGION', sf.region),
  };
  const wrong = settingsProblem(settings);
  if (wrong)
    throw new ConfigError(
      wrong.variable,
      wrong.message(quoted(r.raw(wrong.variable) ?? String(settings[wrong.setting]))),
    );
  return settings;
}

/** IDPOOL_ADMIN_PORT: unset (the admin API on the main port), or a port of its own other than IDPOOL_PORT. */
function adminPort(r: EnvReader, port: number): number | undefined {
  if (r.raw('IDPOOL_ADMIN_PORT') === undefined) return undefined;
  const admin = r.int('IDPOOL_ADMIN_PORT', 0, 1, 65535);
  if (admin === port) throw new ConfigError('IDPOOL_ADMIN_PORT', `must differ from IDPOOL_PORT (both ${port})`);
  return admin;
}

/** IDPOOL_FENCE_CHECK_MS: 0 (off) or 100 ms to 10 minutes; below 100 ms it would read every fence and offset ten times a second. */
function fenceCheckMs(r: EnvReader): number {
  const ms = r.int('IDPOOL_FENCE_CHECK_MS', DEFAULTS.fenceCheckMs, 0, 600_000);
  if (ms > 0 && ms < 100)
    throw new ConfigError('IDPOOL_FENCE_CHECK_MS', `must be 0 (off) or 100 to 600000 ms, got ${ms}`);
  return ms;
}

/** IDPOOL_COMPAT: a comma-separated list of `leaf`, `tinyid` (`none` or unset: neither). */
function compatRoutes(r: EnvReader): CompatRoute[] {
  const raw = r.raw('IDPOOL_COMPAT');
  if (raw === undefined || raw.trim().toLowerCase() === 'none') return [];
  const words = raw.split(',').map((w) => w.trim().toLowerCase());
  if (words.some((w) => !(COMPAT_ROUTES as readonly string[]).includes(w)))
    throw new ConfigError(
      'IDPOOL_COMPAT',
      `must list only ${COMPAT_ROUTES.join(', ')} (comma-separated), got ${quoted(raw)}`,
    );
  return [...new Set(words as CompatRoute[])];
}

function httpServerSettings(r: EnvReader): HttpServerSettings {
  const d = DEFAULTS.http;
  const headersTimeoutMs = r.int('IDPOOL_HTTP_HEADERS_TIMEOUT_MS', d.headersTimeoutMs, 1000, 300_000);
  const requestDefault = Math.max(d.requestTimeoutMs, headersTimeoutMs);
  return {
    headersTimeoutMs,
    // Node requires the headers' limit to be within the whole request's.
    requestTimeoutMs: r.int('IDPOOL_HTTP_REQUEST_TIMEOUT_MS', requestDefault, headersTimeoutMs, 600_000),
    maxConnections: r.int('IDPOOL_HTTP_MAX_CONNECTIONS', d.maxConnections, 1, 1_000_000),
  };
}

function leaseSettings(r: EnvReader): SnowflakeRuntimeSettings {
  const d = DEFAULTS.lease;
  const ttlMs = r.int('IDPOOL_WORKER_LEASE_TTL_MS', d.ttlMs, 3_000, 3_600_000);
  const margin = Math.min(d.marginMs, Math.floor(ttlMs / 5));
  const marginMs = r.int('IDPOOL_WORKER_LEASE_MARGIN_MS', margin, 0, ttlMs - 2_000);
  // At least two heartbeats must fit before the lease would lapse, so one slow or lost renewal is survived.
  const heartbeatMax = Math.min(59, Math.floor((ttlMs - marginMs) / 2000));
  const heartbeat = Math.min(d.heartbeatSeconds, heartbeatMax);
  return {
    ttlMs,
    marginMs,
    heartbeatSeconds: r.int('IDPOOL_WORKER_HEARTBEAT_SECONDS', heartbeat, 1, heartbeatMax),
    maxClockSkewMs: r.int('IDPOOL_MAX_CLOCK_SKEW_MS', d.maxClockSkewMs, 0, 60_000),
    maxWaitMs: r.int('IDPOOL_SNOWFLAKE_MAX_WAIT_MS', d.maxWaitMs, 0, 60_000),
    clockCheckMs: r.int('IDPOOL_CLOCK_CHECK_MS', d.clockCheckMs, 0, 600_000),
  };
}

function opsConfig(r: EnvReader): OpsConfig {
  const d = DEFAULTS.ops;
  const webhook = r.raw('IDPOOL_ALERT_WEBHOOK_URL');
  // The URL may carry a token: never echo it.
  if (webhook !== undefined && !/^https?:$/.test(URL.parse(webhook)?.protocol ?? ''))
    throw new ConfigError('IDPOOL_ALERT_WEBHOOK_URL', 'must be an http:// or https:// URL');
  return {
    alertWebhookUrl: webhook,
    alertDedupeMs: r.int('IDPOOL_ALERT_DEDUPE_MS', d.alertDedupeMs, 0, 7 * 86_400_000),
    alertHorizonDays: r.int('IDPOOL_ALERT_HORIZON_DAYS', d.alertHorizonDays, 1, 36_500),
    alertPoolDrySeconds: r.int('IDPOOL_ALERT_POOL_DRY_SECONDS', d.alertPoolDrySeconds, 0, 86_400),
    alertPoolLowPercent: r.int('IDPOOL_ALERT_POOL_LOW_PERCENT', d.alertPoolLowPercent, 0, 100),
    alertWorkerRangePercent: r.int('IDPOOL_ALERT_WORKER_RANGE_PERCENT', d.alertWorkerRangePercent, 1, 100),
    sampleMs: r.int('IDPOOL_OPS_SAMPLE_MS', d.sampleMs, 50, 60_000),
    rateWindowMs: r.int('IDPOOL_OPS_RATE_WINDOW_MS', d.rateWindowMs, 1000, 3_600_000),
    periodRateWindowMs: r.int('IDPOOL_OPS_PERIOD_RATE_WINDOW_MS', d.periodRateWindowMs, 1000, 86_400_000),
    historyMs: r.int('IDPOOL_OPS_HISTORY_MS', d.historyMs, 10_000, 3_600_000),
    requestLog: r.word('IDPOOL_REQUEST_LOG', REQUEST_LOG_WORDS, d.requestLog, 'all, errors or off'),
    requestLogSlowMs: r.int('IDPOOL_REQUEST_LOG_SLOW_MS', d.requestLogSlowMs, 0, 3_600_000),
    metricsMaxEntities: r.int('IDPOOL_METRICS_MAX_ENTITIES', d.metricsMaxEntities, 0, 100_000),
    instanceTtlMs: r.int('IDPOOL_INSTANCE_TTL_MS', d.instanceTtlMs, 500, 600_000),
  };
}
