import { hostname } from 'node:os';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { Fleet, type FleetOptions, type FleetSelf } from '../fleet/fleet';
import type { FleetInstances } from '../fleet/instances';
import { type AlarmRecord, Alarms, WebhookSink } from './alarms';
import type { OpsConfig } from './settings';
import { RecentServed } from './busiest';
import { OpsMetrics } from './metrics';
import type { DispatchEvents } from '../pool/dispatcher';
import type { RefillEvents } from '../pool/refill-events';
import type { LeaseEvents } from '../segment/lease';
import type { TakeEvents } from '../take/take-service';
import { opsDispatchEvents, opsRefillEvents } from './observers';
import { type OpsOverview, type OverviewQuery, opsOverview } from './overview';
import { OpsSampler, SamplerFeed, type SamplerOptions } from './sampler';

export { requestObserver } from './request-log';

/** What the ops side reads: the sampler's sources (`numbers`: `number-usage.ts`), and more. */
export interface OpsDeps extends Pick<
  SamplerOptions,
  'entities' | 'poolStore' | 'demand' | 'allocator' | 'stride' | 'numbers' | 'snowflake' | 'lease' | 'clockWatch'
> {
  config: OpsConfig;
  clock: Clock;
  log: Logger;
  workers?: { list(): Promise<unknown[]> };
  /** This instance's name in its alarms and heartbeat (host:pid). */
  instance: string;
  /** The fleet this instance is one of: the instances sharing one Redis, or this one alone (embedded). */
  fleet: Pick<FleetOptions, 'store' | 'ttlMs'> & {
    /** Alarm records go to the store and the fleet's are read back (Redis); embedded keeps its own ring only. */
    shared: boolean;
    self: Omit<FleetSelf, 'id' | 'lastSampleAt' | 'activeAlarms' | 'rates'>;
    /** Each view of the fleet read from Redis (the builder prunes unused function libraries with it). */
    onView?(view: FleetInstances): void;
  };
}

/** What the pools, takes and leases report to, built before them (the sampler, after: it reads their numbers layer). */
export interface OpsEvents {
  readonly metrics: OpsMetrics;
  readonly alarms: Alarms;
  readonly refillEvents: RefillEvents;
  readonly dispatchEvents: DispatchEvents;
  /** Every id the take service hands out, whatever its kind. */
  readonly takeEvents: TakeEvents;
  /** Leased segments and their ids per entity, and leases refused by the per-second limit. */
  readonly leaseEvents: LeaseEvents;
  /** Entities taken from and the pools the sweep read, for the sampler. */
  readonly feed: SamplerFeed;
  /** Ids this instance served per entity so far, takes it refused for too few ids, and the recent served rates. */
  readonly served: (entityKey: string) => number;
  readonly refused: (entityKey: string) => number;
  readonly recent: RecentServed;
  /** The fleet's alarm stream, once the fleet is built ({@link createOps}). */
  readonly stream: { fleet?: Fleet };
}

export interface Ops extends OpsEvents {
  readonly sampler: OpsSampler;
  readonly fleet: Fleet;
  overview(query: OverviewQuery): Promise<OpsOverview>;
  /** `GET /admin/instances`: every instance's heartbeat, or this instance alone (Redis not answering: said so). */
  instances(): Promise<FleetInstances>;
  start(): void;
  /** Stops sampling and waits for webhook posts already queued. */
  stop(): Promise<void>;
}

/** Metrics, alarms and the events the pool code reports to. */
export function createOpsEvents(
  deps: Pick<OpsDeps, 'config' | 'clock' | 'log' | 'entities' | 'stride' | 'instance'> & {
    /** Alarm records go to the fleet's stream too (Redis). */
    sharedAlarms: boolean;
  },
): OpsEvents {
  const { config, clock } = deps;
  const log = deps.log.child({ component: 'alarms' });
  // "Recently" for ranking the busiest entities: the forecasts' rate window.
  const recent = new RecentServed(clock, config.rateWindowMs);
  const metrics = new OpsMetrics({ ...config, recentServed: () => recent.rates(), nowMs: () => clock.now() });
  // The fleet is built after the sampler, which needs the alarms: records reach its stream through this.
  const stream: { fleet?: Fleet } = {};
  const toFleet = deps.sharedAlarms ? (record: AlarmRecord) => stream.fleet?.appendAlarm({ ...record }) : undefined;
  const alarms = new Alarms({
    clock,
    log,
    sink: config.alertWebhookUrl ? new WebhookSink(config.alertWebhookUrl) : undefined,
    alertDedupeMs: config.alertDedupeMs,
    instance: deps.instance,
    onRaised: (name, severity) => metrics.alarmsRaised.inc({ alarm: name, severity }),
    onRecord: toFleet,
  });
  const feed = new SamplerFeed({ entities: deps.entities, clock, sampleMs: config.sampleMs });
  // Takes refused for too few ids per entity so far: the sampler calls such a pool dry, whatever its take rate.
  const refused = new Map<string, number>();
  return {
    metrics,
    alarms,
    feed,
    recent,
    stream,
    served: (key) => metrics.idsServed.values.get(key) ?? 0,
    refused: (key) => refused.get(key) ?? 0,
    refillEvents: opsRefillEvents(metrics, alarms, deps.entities, deps.stride, feed),
    dispatchEvents: opsDispatchEvents(metrics, alarms, (entity) => refused.set(entity, (refused.get(entity) ?? 0) + 1)),
    takeEvents: {
      served(entity, count) {
        metrics.idsServed.inc({ entity }, count);
        recent.add(entity, count);
        feed.round.touch(entity);
      },
    },
    leaseEvents: {
      leased(entity, count) {
        metrics.segmentsLeased.inc({ entity });
        metrics.idsLeased.inc({ entity }, count);
        feed.round.touch(entity);
      },
      rateLimited: (entity) => metrics.rateLimited.inc({ entity }),
    },
  };
}

/** The sampler over `events` (and the numbers layer, `deps.numbers`), the fleet and the dashboard's overview. */
export function createOps(events: OpsEvents, deps: OpsDeps): Ops {
  const { clock, config } = deps;
  const { metrics, alarms, recent } = events;
  const sampler = new OpsSampler({
    ...deps,
    ...events,
    ...config,
    log: deps.log.child({ component: 'alarms' }),
  });
  const fleet = new Fleet({
    ...deps.fleet,
    clock,
    log: deps.log.child({ component: 'fleet' }),
    self: {
      ...deps.fleet.self,
      id: deps.instance,
      lastSampleAt: () => sampler.lastSampleAt(),
      activeAlarms: () => alarms.activeAlarms().length,
      rates: () => recent.rates(),
    },
    onView: (view) => {
      metrics.instances.set({ state: 'alive' }, view.alive);
      metrics.instances.set({ state: 'gone' }, view.gone);
      metrics.instancesDisagree.set({ on: 'epoch' }, view.disagreement.epoch ? 1 : 0);
      metrics.instancesDisagree.set({ on: 'version' }, view.disagreement.version ? 1 : 0);
      if (view.source === 'redis') deps.fleet.onView?.(view);
    },
  });
  events.stream.fleet = fleet;
  const sources = {
    ...deps,
    sampler,
    alarms,
    fleet,
    takeRates: metrics.takeRate.values,
    localRates: () => recent.rates(),
    sharedAlarms: deps.fleet.shared,
  };
  return {
    ...events,
    sampler,
    fleet,
    overview: (query) => opsOverview(sources, query),
    instances: () => fleet.instances(),
    start: () => {
      sampler.start();
      fleet.start();
    },
    async stop() {
      await fleet.stop();
      await sampler.stop();
      await alarms.flush();
    },
  };
}

/** This host and process: the instance name in alarms, heartbeats and webhook posts. */
export function instanceName(): string {
  return `${hostname()}:${process.pid}`;
}
