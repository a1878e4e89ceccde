/** The composition root's builders, in the order `createService` (index.ts) calls them, each beside what it feeds. */
import { type EntityStore, SqlEntityStore } from '../entities/entity-store';
import { EntityRegistry } from '../entities/registry';
import { LocalRegistrationGeneration, type RegistrationGeneration } from '../entities/generation-sync';
import type { Clock } from '../clock';
import type { Config } from '../config/config';
import type { OpsConfig } from '../ops/settings';
import { numberUsageByKind } from '../ops/number-usage';
import type { NumberUsageSource } from '../ops/sampler';
import type { Database } from '../db/database';
import { sqliteFile } from '../db/database-url';
import { MemoryIdempotencyStore } from '../idempotency/memory-store';
import { RedisIdempotencyStore, redisAnswerLimits } from '../idempotency/redis-store';
import type { IdempotencyStore } from '../idempotency/store';
import type { Logger } from '../logger';
import { type Ops, type OpsEvents, createOps, createOpsEvents } from '../ops';
import { Demand } from '../pool/demand';
import { Dispatcher } from '../pool/dispatcher';
import { SnowflakeTaker } from '../take/snowflake-taker';
import { TakeService } from '../take/take-service';
import { type EntityRateLimit, MemoryEntityRateLimit, RedisEntityRateLimit } from '../pool/rate-limit';
import { RedisRegistrationGeneration } from '../entities/redis-registration-generation';
import { MemoryPoolStore, MemoryRefillLock } from '../pool/memory-pool-store';
import type { PoolStore, RefillLock } from '../pool/pool-store';
import type { RedisClient } from '../redis/connection';
import { checkRedisMemory } from '../redis/memory';
import { RedisPoolStore } from '../pool/redis-pool-store';
import { RedisRefillLock } from '../pool/refill-lock';
import { OWN_LIBRARY } from '../redis/functions';
import { LibraryPruner } from '../redis/library-pruner';
import { FenceCheck } from '../pool/fence-check';
import { Refiller } from '../pool/refiller';
import { SqlSegmentAllocator } from '../segment/allocator';
import { type DatabaseBehindReport, HighWaterAllocator, HighWaterFile } from '../segment/high-water';
import { HighWaterNumberCounter } from '../segment/number-high-water';
import { IdStride } from '../segment/stride';
import type { IncumbentDatabase, IncumbentKind } from '../segment/incumbent-rows';
import { LiveAllocator } from '../segment/live-allocator';
import type { SnowflakeRuntime } from '../worker/snowflake-runtime';
import { heartbeatHashTtlMs } from '../fleet/fleet';
import { MemoryFleetStore } from '../fleet/memory-fleet-store';
import { RedisFleetStore } from '../fleet/redis-fleet-store';
import { RedisWorkerHolders } from '../worker/redis-worker-holders';
import type { WorkerHolders } from '../worker/worker-holders';
import { idpoolVersion } from '../version';
import type { Built } from './resources';
import type { ServiceSeams } from './internals';
import { RedisNumberStore } from '../pool/number-store';
import { MemoryNumberStore } from '../pool/memory-number-store';
import { NumberPeriods } from '../pool/period-pools';
import { SqlNumberCounter } from '../segment/number-counter';
import { SqlLedger } from '../gapless/ledger';
import { transactionsOf } from '../gapless/transaction';
import { type GaplessHighWater, RedisGaplessHighWater } from '../gapless/high-water';
import type { GaplessSeries } from '../gapless/series';
import { GaplessTaker } from '../gapless/taker';

/** Everything that reads or writes state, over the connections: no timers, nothing to close. */
export interface Stores {
  readonly poolStore: PoolStore;
  readonly lock: RefillLock;
  readonly allocator: SqlSegmentAllocator;
  readonly entities: EntityStore;
  readonly idempotency: IdempotencyStore;
  /** `maxSizePerSecond` of snowflake entities and segment leases (pool takes count in the same window themselves). */
  readonly snowflakeRate: EntityRateLimit;
  readonly registrations: RegistrationGeneration;
  /** The worker leases' record outside the database (Redis only; docs/ha.md). */
  readonly workerHolders: WorkerHolders | undefined;
  readonly stride: IdStride;
  /** In memory, per instance. */
  readonly demand: Demand;
  /** Business numbers: their counters in SQL; they wait in Redis lists or, embedded, the in-process pool. */
  readonly numberCounter: SqlNumberCounter;
  readonly numberStore: { kind: 'redis'; store: RedisNumberStore } | { kind: 'memory'; store: MemoryPoolStore };
  /** Gapless series: the ledger in SQL; its high-water record in Redis (embedded: the file). */
  readonly gaplessLedger: SqlLedger;
  readonly gaplessRecord: GaplessHighWater | undefined;
}

/** What the builders after the registry are given (`base` in index.ts). */
export interface ServiceBase {
  config: Config;
  clock: Clock;
  log: Logger;
  db: Database;
  stores: Stores;
  registry: EntityRegistry;
  /** Live cutovers' incumbent databases: refills reserve from them, readiness checks each. */
  incumbents: ReadonlyMap<IncumbentKind, IncumbentDatabase>;
}

/** Without Redis business numbers wait in the in-process pool beside plain ids. */
function inProcessPool(pool: MemoryPoolStore): Pick<Stores, 'poolStore' | 'numberStore'> {
  return { poolStore: pool, numberStore: { kind: 'memory', store: pool } };
}

export function buildStores(
  deps: Pick<ServiceBase, 'config' | 'db' | 'clock' | 'log'> & { redis: RedisClient | undefined; prefix: string },
): Stores {
  const { config, db, redis, clock, prefix } = deps;
  return {
    ...(redis
      ? {
          poolStore: new RedisPoolStore(redis, prefix),
          numberStore: { kind: 'redis', store: new RedisNumberStore(redis, prefix) } as const,
        }
      : inProcessPool(new MemoryPoolStore(clock))),
    lock: redis ? new RedisRefillLock(redis, clock, config.refillLockTtlMs, prefix) : new MemoryRefillLock(),
    allocator: new SqlSegmentAllocator(db, clock),
    entities: new SqlEntityStore(db),
    idempotency: redis
      ? new RedisIdempotencyStore(
          redis,
          clock,
          prefix,
          redisAnswerLimits(config.idempotencyMaxBytes),
          deps.log.child({ component: 'idempotency' }),
        )
      : new MemoryIdempotencyStore(clock, config.idempotencyMaxBytes),
    snowflakeRate: redis ? new RedisEntityRateLimit(redis, prefix) : new MemoryEntityRateLimit(clock),
    registrations: redis ? new RedisRegistrationGeneration(redis, prefix) : new LocalRegistrationGeneration(),
    workerHolders: redis ? new RedisWorkerHolders(redis, prefix) : undefined,
    stride: new IdStride(config.strideCount, config.strideIndex),
    demand: new Demand({ clock, horizonSeconds: config.poolHorizonSeconds }),
    numberCounter: new SqlNumberCounter(db, clock),
    gaplessLedger: new SqlLedger(db, transactionsOf(db, sqliteFile(config.databaseUrl), clock), clock),
    gaplessRecord: redis ? new RedisGaplessHighWater(redis, prefix) : undefined,
  };
}

/** Refuses a Redis whose eviction may drop idpool's keys; warns when full pools would not fit its maxmemory. */
export async function checkPoolMemory(
  redis: RedisClient | undefined,
  registry: EntityRegistry,
  log: Logger,
): Promise<void> {
  if (!redis) return;
  const ceiling = registry.segmentKeys().reduce((sum, key) => sum + (registry.get(key)?.maxPoolSize ?? 0), 0);
  await checkRedisMemory(redis, ceiling, log.child({ component: 'redis' }));
}

/** What the ops side is built from; `instance` is this instance's name (host:pid) in its alarms and heartbeat. */
type OpsParts = ServiceBase & { opsConfig: OpsConfig; redis: RedisClient | undefined; instance: string };

/** What the pools report to (metrics, alarms, the sampler's feed): built before them, and the sampler after. */
export function buildOpsEvents(deps: OpsParts): Built<OpsEvents> {
  const { clock, log, instance } = deps;
  const events = createOpsEvents({
    config: deps.opsConfig,
    clock,
    log,
    entities: deps.registry,
    stride: deps.stores.stride,
    instance,
    sharedAlarms: deps.redis !== undefined,
  });
  // Alarms raised while the pools stop are posted too: closed after them.
  return { value: events, close: () => events.alarms.flush() };
}

export function buildOps(
  deps: OpsParts & {
    events: OpsEvents;
    numbers: NumberUsageSource;
    prefix: string;
    snowflake: SnowflakeRuntime;
    address: () => string;
  },
): Built<Ops> {
  const { config, stores, snowflake, opsConfig } = deps;
  const layout = snowflake.generator.layout;
  const lease = snowflake.lease;
  const ttlMs = opsConfig.instanceTtlMs;
  // An instance that loaded its library at start names it in a heartbeat within a TTL.
  const pruner =
    deps.redis &&
    new LibraryPruner({
      redis: deps.redis,
      clock: deps.clock,
      log: deps.log.child({ component: 'functions' }),
      graceMs: ttlMs,
    });
  const ops = createOps(deps.events, {
    instance: deps.instance,
    numbers: deps.numbers,
    fleet: {
      // Embedded: a fleet of one, so /admin/instances still lists this instance.
      store: deps.redis
        ? new RedisFleetStore(deps.redis, deps.prefix, heartbeatHashTtlMs(ttlMs))
        : new MemoryFleetStore(),
      shared: deps.redis !== undefined,
      ttlMs,
      onView: pruner && ((view) => void pruner.prune(view.instances)),
      self: {
        version: idpoolVersion(),
        node: process.version,
        startedAt: deps.clock.now(),
        dialect: deps.db.dialect,
        library: deps.redis ? OWN_LIBRARY : null,
        clockSkewMs: () => Object.fromEntries((snowflake.clockWatch?.skews() ?? []).map((r) => [r.against, r.skewMs])),
        address: deps.address,
        workerId: () => (lease ? (lease.status().ok ? (lease.workerId ?? null) : null) : (config.workerId ?? null)),
        epoch: () => stores.poolStore.epoch(),
      },
    },
    config: deps.opsConfig,
    clock: deps.clock,
    log: deps.log,
    entities: deps.registry,
    poolStore: stores.poolStore,
    demand: stores.demand,
    allocator: stores.allocator,
    stride: stores.stride,
    snowflake: () => ({
      timeExhaustedAt: layout.endMs,
      jsSafeLimitAt: Number.isFinite(layout.numberUnsafeFromMs) ? layout.numberUnsafeFromMs : undefined,
      ...(layout.settings.regionBits ? { region: layout.settings.region } : {}),
    }),
    lease: lease && {
      status: () => ({ workerId: lease.workerId, held: lease.status().ok, expiresAt: lease.ceilingMs }),
      usage: async () => {
        const rows = await snowflake.workers.list();
        return { inUse: rows.filter((r) => r.live).length, total: config.workerMax - config.workerMin + 1 };
      },
    },
    workers: snowflake.workers,
    clockWatch: snowflake.clockWatch,
  });
  return { value: ops, close: () => ops.stop() };
}

/** What the pools and the business-number takes are built from. */
type PoolParts = ServiceBase & ServiceSeams & { ops: OpsEvents; highWater?: HighWaterFile };

/** The refiller, the fence check and the dispatcher; each loop starts with its `start()`, all stop on close. */
export function buildPools(deps: PoolParts) {
  const { stores, registry, clock, log } = deps;
  const events = deps.ops.refillEvents;
  const guarded =
    deps.highWater &&
    new HighWaterAllocator(stores.allocator, deps.highWater, (report) => events.databaseBehind(report));
  const allocator = new LiveAllocator({
    own: guarded ?? stores.allocator,
    record: stores.allocator,
    entity: (key) => registry.get(key),
    incumbents: deps.incumbents,
    stride: stores.stride,
  });
  const periods = buildNumberPeriods(deps);
  const refiller = new Refiller({
    demand: stores.demand,
    periods,
    entities: registry,
    allocator,
    store: stores.poolStore,
    lock: stores.lock,
    stride: stores.stride,
    clock,
    log: log.child({ component: 'refiller' }),
    intervalMs: deps.config.refillIntervalMs,
    beforePush: deps.beforePush,
    events,
  });
  followRegistry(registry, refiller, periods, stores);
  const dispatcher = new Dispatcher({
    store: stores.poolStore,
    refiller,
    periods,
    clock,
    events: deps.ops.dispatchEvents,
  });
  const fenceCheck = new FenceCheck({
    entities: registry,
    offsets: stores.allocator,
    reservations: () => refiller.stats.segmentsReserved,
    store: stores.poolStore,
    lock: stores.lock,
    carrier: refiller.carrier,
    clock,
    log: log.child({ component: 'fence-check' }),
    intervalMs: deps.config.fenceCheckMs,
  });
  return {
    value: {
      /** Where refills and leases reserve: idpool's table, or an incumbent's row in a live cutover. */
      allocator,
      refiller,
      dispatcher,
      fenceCheck,
      /** Embedded: every entity's offset carried up to the high-water file, raising `database_behind` (before refills). */
      checkHighWater: async () => {
        await guarded?.checkAll(registry.segmentKeys());
      },
      /** Business numbers' raise and usage. */
      numbers: periods,
      /** Now's period of a business-number entity (read here by the sampler, built after the pools): the numbers layer's for a pooled one, the ledger's for a gapless series. */
      numberUsage: numberUsageByKind(periods, stores.gaplessLedger),
    },
    close: async () => {
      await fenceCheck.stop();
      await refiller.stop();
    },
  };
}
export type Pools = ReturnType<typeof buildPools>['value'];

/** A registration's first refill now (a business number's first take is then served from Redis); a retirement's pools dropped. */
function followRegistry(registry: EntityRegistry, refiller: Refiller, periods: NumberPeriods, stores: Stores): void {
  registry.subscribe({
    onRegistered: (entity) => {
      if (entity.mode !== 'snowflake' && !entity.numbers) refiller.markReset(entity.key);
      else if (entity.numbers && !entity.gapless) refiller.markLow(entity.key);
    },
    onRetired: async (key) => {
      stores.demand.forget(key);
      periods.forget(key);
      await stores.numberStore.store.discard(key);
      return stores.poolStore.discard(key);
    },
  });
}

/** The pools' numbers layer: on Redis by its clock; in process by the process's, counters behind the high-water file. */
function buildNumberPeriods(deps: PoolParts): NumberPeriods {
  const { stores } = deps;
  const numbers = stores.numberStore;
  const common = {
    lock: stores.lock,
    events: deps.ops.dispatchEvents,
    clock: deps.clock,
    log: deps.log.child({ component: 'numbers' }),
    retryMs: deps.config.refillIntervalMs,
  };
  const databaseBehind = (report: DatabaseBehindReport) => deps.ops.refillEvents.databaseBehind(report);
  if (numbers.kind === 'redis')
    return new NumberPeriods({
      ...common,
      store: numbers.store,
      counter: stores.numberCounter,
      fenceCheckMs: deps.config.fenceCheckMs,
      databaseBehind,
    });
  const counter = deps.highWater
    ? new HighWaterNumberCounter(stores.numberCounter, deps.highWater, databaseBehind)
    : stores.numberCounter;
  return new NumberPeriods({ ...common, store: new MemoryNumberStore(numbers.store, counter, deps.clock), counter });
}

/** The one take of every face, over each kind's taker. */
export function buildTakes(
  deps: Pick<ServiceBase, 'stores'> & { pools: Pools; gapless: GaplessSeries; snowflake: SnowflakeRuntime; ops: Ops },
): TakeService {
  return new TakeService({
    takers: {
      segment: deps.pools.dispatcher,
      number: deps.pools.dispatcher,
      gapless: new GaplessTaker(deps.gapless),
      snowflake: new SnowflakeTaker({
        make: (entityKey, count) => deps.snowflake.make(entityKey, count),
        rate: deps.stores.snowflakeRate,
      }),
    },
    events: deps.ops.takeEvents,
  });
}
