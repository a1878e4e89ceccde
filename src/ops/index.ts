import { hostname } from 'node:os';
import type { EntityConfig } from '../entities/entity';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { type AlarmRecord, Alarms, WebhookSink } from './alarms';
import type { OpsConfig } from '../config/config';
import { RecentServed, busiest } from './busiest';
import { OpsMetrics } from './metrics';
import { type EntityOverview, type LeaseView, OpsSampler, type SamplerOptions, type SnowflakeForecast } from './sampler';

export { requestObserver } from './request-log';
export type { LeaseView, SnowflakeForecast } from './sampler';

/** What the refiller reports (the shape of `RefillEvents` in src/pool/refiller.ts). */
export interface RefillObserver {
  refilled(entityKey: string, seconds: number, steps: number, numbers: number): void;
  fenceRefused(entityKey: string, start: bigint, end: bigint): void;
  poolDiscarded(entityKey: string, fence: bigint): void;
  serverChanged(from: string, to: string): void;
}

/** What the dispatcher reports (the shape of `DispatchEvents` in src/pool/dispatcher.ts). */
export interface DispatchObserver {
  served(entityKey: string, count: number): void;
  rateLimited(entityKey: string): void;
  exhausted(entityKey: string, count: number): void;
}

/** A snowflake entity on the dashboard: no pool, only how fast this instance hands out its ids. */
export interface SnowflakeEntityOverview {
  key: string;
  mode: 'snowflake';
  /** Ids per second served by this instance (snowflake ids are made locally; other instances count their own). */
  takePerSecond: number;
}

/** Which entities `GET /admin/ops` shows: the busiest `limit`, of those whose key contains `search` when given. */
export interface OverviewQuery {
  limit: number;
  search?: string;
}

/** Everything the dashboard shows, in one JSON document (`GET /admin/ops`). */
export interface OpsOverview {
  at: string;
  /** Live entities in all. */
  entityCount: number;
  /** Entities matching the search (all of them without one); `entities` holds the busiest of these. */
  matching: number;
  entities: Array<EntityOverview | SnowflakeEntityOverview>;
  snowflake: { timeExhaustedAt: string; jsSafeLimitAt: string | null } | null;
  workers: unknown[];
  alarms: { active: number; recent: AlarmRecord[] };
}

export interface OpsDeps {
  config: OpsConfig;
  clock: Clock;
  log: Logger;
  apps: { list(): EntityConfig[]; get(key: string): EntityConfig | undefined };
  pools: SamplerOptions['pools'];
  sizing: SamplerOptions['sizing'];
  offsets: SamplerOptions['offsets'];
  cluster: SamplerOptions['cluster'];
  snowflake?: () => SnowflakeForecast | undefined;
  lease?: LeaseView;
  workers?: { list(): Promise<unknown[]> };
  /** Process metrics (CPU, heap, event loop); off in tests that build many services. */
  defaultMetrics?: boolean;
}

export interface Ops {
  readonly metrics: OpsMetrics;
  readonly alarms: Alarms;
  readonly sampler: OpsSampler;
  readonly refillEvents: RefillObserver;
  readonly dispatchEvents: DispatchObserver;
  overview(query: OverviewQuery): Promise<OpsOverview>;
  /** `issuer`, reporting the ids it hands out as served (snowflake ids never pass the dispatcher). */
  countServed<T extends { take(entityKey: string, count: number): string[] | Promise<string[]> }>(issuer: T): T;
  start(): void;
  /** Stops sampling and waits for webhook posts already queued. */
  stop(): Promise<void>;
}

/** Builds metrics, alarms and the sampler, and the observers the pool code reports to. */
export function createOps(deps: OpsDeps): Ops {
  const { config, clock } = deps;
  const log = deps.log.child({ component: 'alarms' });
  // "Recently" for ranking the busiest entities: the forecasts' rate window.
  const recent = new RecentServed(clock, config.rateWindowMs);
  const metrics = new OpsMetrics({ defaultMetrics: deps.defaultMetrics, maxEntities: config.metricsMaxEntities, recentServed: () => recent.rates() });
  const alarms = new Alarms({
    clock,
    log,
    sink: config.alertWebhookUrl ? new WebhookSink(config.alertWebhookUrl) : undefined,
    dedupeMs: config.alertDedupeMs,
    instance: `${hostname()}:${process.pid}`,
    onRaised: (name, severity) => metrics.alarmsRaised.inc({ alarm: name, severity }),
  });
  const served = new Map<string, number>();
  const sampler = new OpsSampler({
    apps: deps.apps,
    served: (key) => served.get(key) ?? 0,
    pools: deps.pools,
    sizing: deps.sizing,
    offsets: deps.offsets,
    cluster: deps.cluster,
    metrics,
    alarms,
    clock,
    log,
    snowflake: deps.snowflake,
    lease: deps.lease,
    sampleMs: config.sampleMs,
    rateWindowMs: config.rateWindowMs,
    // Five samples at least, so one refill does not make the chart jump.
    chartRateWindowMs: Math.max(5000, config.sampleMs * 5),
    historyMs: config.historyMs,
    horizonSeconds: config.alertHorizonDays * 86_400,
    poolDrySeconds: config.alertPoolDrySeconds,
    poolLowPercent: config.alertPoolLowPercent,
    workerRangePercent: config.alertWorkerRangePercent,
  });

  const refillEvents: RefillObserver = {
    refilled(entity, seconds, steps, numbers) {
      metrics.refills.inc({ entity });
      metrics.refillDuration.observe(seconds);
      metrics.segmentsReserved.inc({ entity }, steps);
      metrics.numbersReserved.inc({ entity }, numbers);
    },
    fenceRefused(entity, start, end) {
      metrics.fenceRefusals.inc({ entity });
      alarms.raise({
        name: 'fence_refused',
        severity: 'warning',
        entityKey: entity,
        message: `segment [${start}, ${end}) of ${entity} refused by the fence (a newer one was pushed); dropped`,
        details: { start: start.toString(), end: end.toString() },
      });
    },
    poolDiscarded(entity, fence) {
      // The refiller also "resets" a pool no server has claimed yet (a new
      // entity): with nothing ever reserved below the fence there was
      // nothing to discard.
      const app = deps.apps.get(entity);
      if (app && fence < deps.cluster.toId(app.startOffset)) return;
      metrics.poolsDiscarded.inc({ entity });
      alarms.raise({
        name: 'pool_discarded',
        severity: 'warning',
        entityKey: entity,
        message: `pool of ${entity} discarded after a Redis server change; refilled from the database`,
        details: { fence: fence.toString() },
      });
    },
    serverChanged(from, to) {
      metrics.redisServerChanges.inc();
      alarms.raise({
        name: 'redis_server_changed',
        severity: 'critical',
        message: 'Redis server changed (restart or failover): every pool is discarded and refilled from the database',
        details: { from, to },
      });
    },
  };

  const dispatchEvents: DispatchObserver = {
    served(entity, count) {
      metrics.idsServed.inc({ entity }, count);
      served.set(entity, (served.get(entity) ?? 0) + count);
      recent.add(entity, count);
    },
    rateLimited: (entity) => metrics.rateLimited.inc({ entity }),
    exhausted(entity, count) {
      metrics.exhausted.inc({ entity });
      alarms.raise({
        name: 'pool_exhausted',
        severity: 'critical',
        entityKey: entity,
        message: `pool of ${entity} exhausted: a request for ${count} ids found too few after waiting for a refill`,
        details: { count },
      });
    },
  };

  return {
    metrics,
    alarms,
    sampler,
    refillEvents,
    dispatchEvents,
    async overview(query) {
      const sf = deps.snowflake?.();
      const all = deps.apps.list();
      const matching = query.search ? all.filter((a) => a.key.includes(query.search!)) : all;
      const localRates = recent.rates();
      const takeRates = new Map<string, number>();
      for (const app of matching) if (app.mode !== 'snowflake') takeRates.set(app.key, sampler.forecast(app.key)?.takePerSecond ?? 0);
      const chosen = busiest(query.limit, matching.map((a) => a.key), localRates, takeRates);
      // A page costs its rows, not every entity.
      const pooled = sampler.overview(matching.filter((a) => chosen.has(a.key) && a.mode !== 'snowflake'));
      const snowflakes: SnowflakeEntityOverview[] = matching
        .filter((a) => chosen.has(a.key) && a.mode === 'snowflake')
        .map((a) => ({ key: a.key, mode: 'snowflake', takePerSecond: Math.round((localRates.get(a.key) ?? 0) * 100) / 100 }));
      const entities = [...pooled, ...snowflakes].sort((a, b) => b.takePerSecond - a.takePerSecond || (a.key < b.key ? -1 : 1));
      return {
        at: new Date(clock.now()).toISOString(),
        entityCount: all.length,
        matching: matching.length,
        entities,
        snowflake: sf ? { timeExhaustedAt: new Date(sf.timeExhaustedAt).toISOString(), jsSafeLimitAt: sf.jsSafeLimitAt === undefined ? null : new Date(sf.jsSafeLimitAt).toISOString() } : null,
        // Live leases only: the worker table has a row per id of the range (up to 1023).
        workers: deps.workers ? (await deps.workers.list()).filter((w) => (w as { live?: unknown }).live !== false) : [],
        alarms: { active: alarms.activeAlarms().length, recent: alarms.recent() },
      };
    },
    countServed(issuer) {
      const counted = Object.create(issuer) as typeof issuer;
      counted.take = (entityKey: string, count: number) => {
        const ids = issuer.take(entityKey, count);
        if (Array.isArray(ids)) {
          dispatchEvents.served(entityKey, ids.length);
          return ids;
        }
        return ids.then((taken) => {
          dispatchEvents.served(entityKey, taken.length);
          return taken;
        });
      };
      return counted;
    },
    start: () => sampler.start(),
    async stop() {
      await sampler.stop();
      await alarms.flush();
    },
  };
}
