import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import cron, { type ScheduledTask } from 'node-cron';
import type { Express } from 'express';
import type { AppConfig } from './apps/app';
import { AppStore } from './apps/app-store';
import { MemoryEntityRateLimit, RedisEntityRateLimit } from './apps/rate-limit';
import { RedisRegistrationGeneration } from './apps/redis-registration-generation';
import { AppRegistry } from './apps/registry';
import { type Clock, systemClock } from './clock';
import type { Config } from './config/config';
import { type Database, openDatabase } from './db/database';
import { checkClusterMapping } from './library/cluster-mapping';
import { createHttpApp, type ReadinessReport, type SnowflakeIssuer } from './http/app';
import { AuthFailureLimiter } from './http/auth';
import { MemoryIdempotencyStore, RedisIdempotencyStore } from './http/idempotency';
import { type Logger, silentLogger } from './logger';
import { Dispatcher } from './pool/dispatcher';
import { DEFAULT_PREFIX } from './pool/keys';
import { MemoryPoolStore, MemoryRefillLock } from './pool/memory-pool-store';
import type { PoolStore, RefillLock } from './pool/pool-store';
import { RedisPoolStore, RedisRefillLock, loadFunctions } from './pool/redis-pool-store';
import { Refiller } from './pool/refiller';
import { type Segment, SqlSegmentAllocator } from './segment/allocator';
import { ClusterMap } from './segment/cluster';
import { type Ops, type OpsConfig, OPS_DEFAULTS, createOps, requestObserver } from './ops';
import { sqlOffsets } from './ops/sampler';
import { type SnowflakeRuntime, createSnowflakeRuntime } from './snowflake/runtime';
import type { SnowflakeRuntimeSettings } from './worker/settings';

/**
 * In-flight requests get this long to finish on stop. An id request takes
 * milliseconds (250 ms at most waiting for a refill); 8 s stays inside
 * main.ts's 10 s bound with room to close Redis and the database.
 */
const SHUTDOWN_GRACE_MS = 8000;

export interface ServiceOptions {
  clock?: Clock;
  log?: Logger;
  /** Prefix of every Redis key (tests use their own). */
  redisPrefix?: string;
  /** Test seam: runs between reserving a segment and pushing it. */
  beforePush?: (entityKey: string, segment: Segment) => Promise<void>;
  /** Refill lock TTL in ms (tests shorten it to exercise the fence). */
  lockTtlMs?: number;
  /** Worker lease and snowflake wait settings, over those read from the environment. */
  snowflake?: Partial<SnowflakeRuntimeSettings>;
  /** Metrics, forecasts, alarms and request logs (`loadOpsConfig()` in main); defaults in OPS_DEFAULTS. */
  ops?: Partial<OpsConfig>;
  /** How long `stop()` lets in-flight requests finish before closing their connections. */
  shutdownGraceMs?: number;
}

export interface Service {
  readonly app: Express;
  readonly db: Database;
  readonly redis: Redis | undefined;
  readonly store: PoolStore;
  readonly registry: AppRegistry;
  readonly refiller: Refiller;
  readonly dispatcher: Dispatcher;
  /** Snowflake generator and worker lease. */
  readonly snowflake: SnowflakeRuntime;
  /** Metrics, forecasts and alarms. */
  readonly ops: Ops;
  /** Starts refilling and listens on `port` (0 = any); resolves to the port. */
  listen(port: number): Promise<number>;
  /** Stops accepting, finishes in-flight requests, stops refilling, closes connections. */
  stop(): Promise<void>;
}

/** Connects to Redis, failing fast while it is down instead of queueing requests. */
export async function connectRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    // A request must not hang on a Redis that is down: no offline queue,
    // and one retry at most; the HTTP layer answers 503 with Retry-After.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 2000,
    // No enableAutoPipelining: it can throw an uncaught TypeError out of a
    // callback and crash the process (redis/ioredis#1931), seen here twice:
    // when a batch failed as the connection closed, and when Redlock defined
    // its scripts while an auto-pipeline was open (redis-autopipeline.test.ts).
    // Commands from concurrent requests still share the socket without
    // waiting on each other.
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
  redis.on('error', () => undefined);
  await redis.connect();
  return redis;
}

/**
 * The composition root: config → database → stores → services → HTTP app.
 * Everything is built here and handed down; nothing is a module singleton.
 */
export async function createService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const db = await openDatabase(config.databaseUrl);
  let redis: Redis | undefined;
  try {
    await checkClusterMapping(db, config.clusterCount, config.clusterIndex, clock.now());
    redis = config.redisUrl ? await connectRedis(config.redisUrl) : undefined;
    if (redis) await loadFunctions(redis);
  } catch (err) {
    redis?.disconnect();
    await db.close();
    throw err;
  }

  const prefix = options.redisPrefix ?? DEFAULT_PREFIX;
  const store: PoolStore = redis ? new RedisPoolStore(redis, prefix) : new MemoryPoolStore(clock);
  const lock: RefillLock = redis ? new RedisRefillLock(redis, prefix) : new MemoryRefillLock();
  const allocator = new SqlSegmentAllocator(db, clock);
  const cluster = new ClusterMap(config.clusterCount, config.clusterIndex);
  const appStore = new AppStore(db);

  let refiller: Refiller | undefined;
  const registry = new AppRegistry(appStore, clock, {
    onRegistered: (app: AppConfig) => {
      if (app.mode !== 'snowflake') refiller?.markReset(app.key);
    },
    onRetired: (key: string) => store.discard(key),
  }, redis ? new RedisRegistrationGeneration(redis, prefix) : undefined, config.refillIntervalMs);
  // Ops reads the snowflake side lazily: it is built after the pool side.
  let snowflakeRuntime: SnowflakeRuntime | undefined;
  let stopping = false;
  const opsConfig: OpsConfig = { ...OPS_DEFAULTS, ...options.ops };
  const ops = createOps({
    config: opsConfig,
    clock,
    log,
    apps: registry,
    pools: store,
    offsets: sqlOffsets(db),
    cluster: { toId: (n) => cluster.toId(n), count: config.clusterCount },
    snowflake: () => {
      const layout = snowflakeRuntime?.generator.layout;
      return layout && { timeExhaustedAt: layout.endMs, jsSafeLimitAt: Number.isFinite(layout.numberUnsafeFromMs) ? layout.numberUnsafeFromMs : undefined };
    },
    lease:
      config.workerId === undefined
        ? {
            status: () => {
              const lease = snowflakeRuntime?.lease;
              return { workerId: lease?.workerId, held: lease?.status().ok ?? false, expiresAt: lease?.ceilingMs };
            },
            usage: async () => {
              const rows = snowflakeRuntime ? await snowflakeRuntime.workers.list() : [];
              return { inUse: rows.filter((r) => r.live).length, total: config.workerMax - config.workerMin + 1 };
            },
          }
        : undefined,
    workers: { list: async () => (snowflakeRuntime ? snowflakeRuntime.workers.list() : []) },
  });
  refiller = new Refiller({
    apps: registry,
    allocator,
    store,
    lock,
    cluster,
    clock,
    log: log.child({ component: 'refiller' }),
    intervalMs: config.refillIntervalMs,
    beforePush: options.beforePush,
    lockTtlMs: options.lockTtlMs,
    events: ops.refillEvents,
  });
  const dispatcher = new Dispatcher({ store, refiller, clock, log: log.child({ component: 'dispatcher' }), events: ops.dispatchEvents });
  await registry.load();

  try {
    snowflakeRuntime = await createSnowflakeRuntime({ config, db, clock, log: log.child({ component: 'snowflake' }), settings: options.snowflake });
  } catch (err) {
    redis?.disconnect();
    await db.close();
    throw err;
  }
  snowflakeRuntime.start();
  const snowflake: SnowflakeIssuer = snowflakeRuntime.issuer;
  const runtime = snowflakeRuntime;

  const readiness = async (): Promise<ReadinessReport> => {
    const checks: Record<string, string> = {};
    // Load balancers stop sending here first; the listener closes right after.
    if (stopping) return { ready: false, checks, reason: 'shutting down' };
    const probe = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await Promise.race([fn(), clock.sleep(1000).then(() => Promise.reject(new Error('timed out after 1 s')))]);
        checks[name] = 'ok';
      } catch (err) {
        checks[name] = String((err as Error).message ?? err);
      }
    };
    await Promise.all([probe('database', () => db.query('SELECT 1')), probe(store.kind === 'redis' ? 'redis' : 'pool', () => store.ping())]);
    checks.lease = runtime.leaseCheck();
    return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
  };

  const app = createHttpApp({
    registry,
    dispatcher,
    pools: store,
    offsets: allocator,
    adminToken: config.adminToken,
    snowflake,
    workers: runtime.workers,
    readiness,
    metrics: () => ops.metrics.render(),
    observe: requestObserver({ log: log.child({ component: 'http' }), logRequests: opsConfig.requestLog, duration: ops.metrics.httpDuration }),
    draining: () => stopping,
    ops,
    idempotency: redis ? new RedisIdempotencyStore(redis, clock, prefix) : new MemoryIdempotencyStore(clock, config.idempotencyMaxBytes),
    authFailures: new AuthFailureLimiter(clock),
    metricsToken: config.metricsToken,
    snowflakeRate: redis ? new RedisEntityRateLimit(redis, clock, prefix) : new MemoryEntityRateLimit(clock),
    log: log.child({ component: 'http' }),
  });

  let server: Server | undefined;
  let refresh: ScheduledTask | undefined;
  const refreshRegistry = () =>
    registry.refresh().catch((err) => log.warn({ err: String(err?.message ?? err) }, 'could not refresh entity configuration'));

  return {
    app,
    db,
    redis,
    store,
    registry,
    refiller,
    dispatcher,
    snowflake: runtime,
    ops,
    async listen(port) {
      refiller!.start();
      ops.start();
      // Entity changes made through other instances: picked up within a second.
      refresh = cron.schedule('* * * * * *', refreshRegistry, { noOverlap: true });
      server = await new Promise<Server>((resolve, reject) => {
        const s = app.listen(port, (err?: Error) => (err ? reject(err) : resolve(s)));
      });
      server.keepAliveTimeout = 65_000;
      return (server.address() as AddressInfo).port;
    },
    async stop() {
      stopping = true;
      if (server) {
        // Stop accepting; idle keep-alive connections close now, busy ones
        // after their response (it carries `Connection: close`). A request
        // still running after the grace period loses its connection.
        const s = server;
        const closed = new Promise<void>((resolve) => s.close(() => resolve()));
        s.closeIdleConnections();
        const grace = setTimeout(() => s.closeAllConnections(), options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS);
        await closed;
        clearTimeout(grace);
      }
      await refresh?.destroy();
      await refiller!.stop();
      await ops.stop();
      await runtime.stop();
      if (redis) await redis.quit().catch(() => redis!.disconnect());
      await db.close();
    },
  };
}
