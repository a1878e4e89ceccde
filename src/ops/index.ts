import { hostname } from 'node:os';
import type { EntityConfig } from '../entities/entity';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { Alarms, WebhookSink } from './alarms';
import type { OpsConfig } from '../config/config';
import { RecentServed } from './busiest';
import { OpsMetrics } from './metrics';
import { type DispatchObserver, type Issuer, type RefillObserver, countingServed, dispatchObserver, refillObserver } from './observers';
import { type OpsOverview, type OverviewQuery, opsOverview } from './overview';
import { type LeaseView, OpsSampler, type SamplerOptions, type SnowflakeForecast } from './sampler';

export { requestObserver } from './request-log';
export type { LeaseView, SnowflakeForecast } from './sampler';
export type { DispatchObserver, RefillObserver } from './observers';
export type { OpsOverview, OverviewQuery, SnowflakeEntityOverview } from './overview';

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
  countServed<T extends Issuer>(issuer: T): T;
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
  const alarms = createAlarms(config, clock, log, metrics);
  // Ids this instance has served per entity so far: the sampler records them with each sample.
  const served = new Map<string, number>();
  const sampler = createSampler(deps, log, metrics, alarms, (key) => served.get(key) ?? 0);
  const refillEvents = refillObserver(metrics, alarms, deps.apps, deps.cluster);
  const dispatchEvents = dispatchObserver(metrics, alarms, (entity, count) => {
    served.set(entity, (served.get(entity) ?? 0) + count);
    recent.add(entity, count);
  });
  const sources = { clock, apps: deps.apps, sampler, localRates: () => recent.rates(), alarms, snowflake: deps.snowflake, workers: deps.workers };

  return {
    metrics,
    alarms,
    sampler,
    refillEvents,
    dispatchEvents,
    overview: (query) => opsOverview(sources, query),
    countServed: (issuer) => countingServed(issuer, dispatchEvents),
    start: () => sampler.start(),
    async stop() {
      await sampler.stop();
      await alarms.flush();
    },
  };
}

/** Alarms named by this host and process, posted to the webhook when one is configured, counted in the metrics. */
function createAlarms(config: OpsConfig, clock: Clock, log: Logger, metrics: OpsMetrics): Alarms {
  return new Alarms({
    clock,
    log,
    sink: config.alertWebhookUrl ? new WebhookSink(config.alertWebhookUrl) : undefined,
    dedupeMs: config.alertDedupeMs,
    instance: `${hostname()}:${process.pid}`,
    onRaised: (name, severity) => metrics.alarmsRaised.inc({ alarm: name, severity }),
  });
}

/** The sampler with the ops settings: how often it samples, the windows it rates over, the alarm thresholds. */
function createSampler(deps: OpsDeps, log: Logger, metrics: OpsMetrics, alarms: Alarms, served: (entityKey: string) => number): OpsSampler {
  const { config } = deps;
  return new OpsSampler({
    apps: deps.apps,
    served,
    pools: deps.pools,
    sizing: deps.sizing,
    offsets: deps.offsets,
    cluster: deps.cluster,
    metrics,
    alarms,
    clock: deps.clock,
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
}
