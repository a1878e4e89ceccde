import { Counter, Gauge, Histogram, type Metric, Registry, collectDefaultMetrics } from 'prom-client';
import { busiest } from './busiest';
import { registerEventLoopDelay } from './event-loop-delay';
import { EntitySampleAge, EntitySeries, type Family, type Total } from './entity-series';
import type { OpsConfig } from './settings';

/** `metricsMaxEntities` unset: per-entity series for every entity. */
export interface OpsMetricsOptions extends Partial<Pick<OpsConfig, 'metricsMaxEntities'>> {
  defaultMetrics?: boolean;
  /** Ids per second each entity was served recently by this instance (ranks the busiest). */
  recentServed?: () => Map<string, number>;
  /** Unix ms, for sample ages (the injected clock). */
  nowMs?: () => number;
}

/**
 * Every metric idpool exports (README "Metrics and forecasts"), on a registry of its own so two services in
 * one process (tests, the embedded library) never share counters.
 */
export class OpsMetrics {
  readonly registry = new Registry();

  // Pools (set by the sampler).
  readonly poolSize = this.entityGauge('idpool_pool_size', 'Ids ready in the pool', 'sum');
  readonly poolLowWatermark = this.entityGauge('idpool_pool_low_watermark', 'Pool size below which a refill starts');
  readonly poolTarget = this.entityGauge(
    'idpool_pool_target',
    'Pool size a refill tops up to: recent peak demand times IDPOOL_POOL_HORIZON_S, within [floor, max]',
    'sum',
  );
  readonly poolMax = this.entityGauge('idpool_pool_max', 'Ceiling of the pool size (max_pool_size)', 'sum');
  readonly currentOffset = this.entityGauge(
    'idpool_current_offset',
    'Next unreserved number of the entity (current_offset; exact below 2^53)',
  );
  readonly takeRate = this.entityGauge(
    'idpool_take_rate_ids_per_second',
    'Ids taken per second by all consumers (estimated from reservations and pool size)',
    'sum',
  );
  readonly reserveRate = this.entityGauge(
    'idpool_reserve_rate_per_second',
    'Numbers reserved per second from the database',
    'sum',
  );

  // Forecasts (set by the sampler; +Inf when the rate is 0).
  readonly forecastPoolDry = this.entityGauge(
    'idpool_forecast_pool_dry_seconds',
    'Seconds until the pool is empty at the current take rate, without refills',
    'min',
  );
  readonly forecastJsSafe = this.entityGauge(
    'idpool_forecast_js_safe_limit_seconds',
    'Seconds until the highest reserved id passes 2^53 at the current take rate (0 = already past)',
    'min',
  );
  readonly forecastInt63 = this.entityGauge(
    'idpool_forecast_int63_limit_seconds',
    'Seconds until the highest reserved id passes 2^63 at the current take rate',
    'min',
  );
  // Business numbers (set by the sampler; one series per entity whatever the period: a new period moves the values).
  readonly numberPeriodStart = this.entityGauge(
    'idpool_number_period_start_timestamp_seconds',
    "Unix time the entity's current business-number period started (by the clock that decides it)",
  );
  readonly numberPeriodEnd = this.entityGauge(
    'idpool_number_period_end_timestamp_seconds',
    "Unix time the entity's current business-number period ends (the next one starts)",
  );
  readonly numberPeriodUsed = this.entityGauge(
    'idpool_number_period_used',
    'Numbers of the current period no take can have any more: handed out, or dropped as gaps',
  );
  readonly numberPeriodCapacity = this.entityGauge(
    'idpool_number_period_capacity',
    'Numbers one period holds: 10^N - 1 for {seq:N}',
  );
  readonly forecastNumberPeriod = this.entityGauge(
    'idpool_forecast_number_period_exhausted_seconds',
    "Seconds until the current period's numbers run out at the rate over IDPOOL_OPS_PERIOD_RATE_WINDOW_MS (0 = full, +Inf = nothing taken)",
    'min',
  );
  // Sampling freshness: an entity the sampler no longer reaches must not show frozen values as current.
  readonly sampleAge: EntitySampleAge;
  readonly sampleAgeMax: Gauge = new Gauge({
    name: 'idpool_ops_sample_age_max_seconds',
    help: 'Seconds since the least recently sampled entity was sampled (stale when above 2 × idpool_ops_sample_round_seconds)',
    registers: [this.registry],
    collect: (): void => this.sampleAgeMax.set(this.sampleAge.maxAge()),
  });
  readonly sampleRound = this.gauge(
    'idpool_ops_sample_round_seconds',
    'Seconds the ops sampler takes to read every entity once (entities are read 1,000 a run)',
  );
  readonly sampleFailures = this.entityCounter(
    'idpool_ops_sample_failures_total',
    'Samples of an entity that failed (a Redis or SQL error on its keys, a bad number); logged with the entity key',
  );
  readonly snowflakeTimeExhausted = this.gauge(
    'idpool_snowflake_time_exhausted_timestamp_seconds',
    'Unix time at which the snowflake layout runs out of timestamp bits',
  );
  readonly snowflakeJsSafe = this.gauge(
    'idpool_snowflake_js_safe_limit_timestamp_seconds',
    'Unix time from which snowflake ids pass 2^53',
  );

  // The fleet (fleet/fleet.ts), as this instance saw it at its last heartbeat.
  readonly instances = this.gauge(
    'idpool_instances',
    'Instances of this deployment as this instance sees them: alive (heartbeat within its TTL), gone (past it, listed until dropped)',
    ['state'],
  );
  readonly instancesDisagree = this.gauge(
    'idpool_instances_disagree',
    'Alive instances see more than one Redis epoch (on="epoch") or run more than one idpool version (on="version"): 1, else 0',
    ['on'],
  );

  // Hot-path counters.
  readonly idsServed = this.entityCounter('idpool_ids_served_total', 'Ids handed out by this instance');
  readonly rateLimited = this.entityCounter('idpool_rate_limited_total', 'Requests answered 429 rate_limited');
  readonly exhausted = this.entityCounter('idpool_pool_exhausted_total', 'Requests answered 503 pool_exhausted');
  readonly segmentsLeased = this.entityCounter(
    'idpool_segments_leased_total',
    'Segments leased to clients that issue their ids themselves',
  );
  readonly idsLeased = this.entityCounter('idpool_ids_leased_total', 'Ids in the segments leased to clients');

  // Refiller.
  readonly refills = this.entityCounter('idpool_refills_total', 'Refills that reserved and pushed a segment');
  // One histogram for every entity: 14 series per entity were most of a scrape at 100,000 entities.
  readonly refillDuration = new Histogram({
    name: 'idpool_refill_duration_seconds',
    help: 'Time from reserving a segment to the end of its push (all entities)',
    labelNames: [],
    // One SQL round trip plus pushes of 10k ids (~2 ms each): milliseconds, up to seconds for a 5M-id pool.
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly segmentsReserved = this.entityCounter(
    'idpool_segments_reserved_total',
    'Segments (steps) reserved from the database',
  );
  readonly numbersReserved = this.entityCounter('idpool_numbers_reserved_total', 'Numbers reserved from the database');
  readonly fenceRefusals = this.entityCounter(
    'idpool_fence_refusals_total',
    'Segments refused by the fence and dropped',
  );
  readonly databaseBehind = this.entityCounter(
    'idpool_database_behind_total',
    'Times the database was seen behind a record of what was reserved (restored or failed back) and the entity carried past it',
  );
  readonly poolsDiscarded = this.entityCounter(
    'idpool_pools_discarded_total',
    'Pools discarded because they were filled in another Redis epoch',
  );
  readonly redisEpochChanges = this.counter(
    'idpool_redis_server_changes_total',
    'Times the Redis epoch was seen to change (restart, failover, failback)',
  );
  // Not per entity: a failing dependency fails every entity's refill at once.
  readonly refillFailures = this.counter(
    'idpool_refill_failures_total',
    'Refills and pool sweeps that failed (logged as "refill failed")',
  );

  // Dependencies (probed at each scrape, as /readyz probes them).
  readonly dependencyUp = this.gauge(
    'idpool_dependency_up',
    '1 when the dependency answered its readiness probe at this scrape, 0 when not',
    ['dependency'],
  );

  // HTTP.
  readonly httpDuration = new Histogram({
    name: 'idpool_http_request_duration_seconds',
    help: 'HTTP request duration by route template and status',
    labelNames: ['method', 'route', 'status'],
    // Well under a millisecond on a warm pool; the tail catches the shortage wait (250 ms) and slow dependencies.
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  // Worker lease (snowflake).
  readonly leaseHeld = this.gauge('idpool_worker_lease_held', '1 while this instance holds a usable worker lease');
  readonly leaseRemaining = this.gauge(
    'idpool_worker_lease_remaining_seconds',
    'Seconds until the worker lease expires unless renewed',
  );
  readonly clockSkew = this.gauge(
    'idpool_clock_skew_seconds',
    "This instance's clock minus the reference's (redis: TIME, database: its NOW), as last checked (IDPOOL_CLOCK_CHECK_MS)",
    ['against'],
  );
  readonly leaseWorkerId = this.gauge('idpool_worker_id', 'Worker id this instance holds (-1 = none)');
  readonly workersInUse = this.gauge(
    'idpool_worker_ids_in_use',
    'Worker ids with a live lease in this deployment range',
  );
  readonly workersAvailable = this.gauge(
    'idpool_worker_ids_in_range',
    'Worker ids in this deployment range (IDPOOL_WORKER_MIN..MAX)',
  );

  // Alarms.
  readonly alarmsRaised = this.counter('idpool_alarms_total', 'Alarms raised', ['alarm', 'severity']);

  constructor(private readonly options: OpsMetricsOptions = {}) {
    this.sampleAge = this.register(new EntitySampleAge(options.nowMs ?? Date.now));
    if (options.defaultMetrics !== false) {
      // prom-client's 10 ms event-loop timer slowed to once a minute, its gauges replaced (event-loop-delay.ts).
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 60_000 });
      registerEventLoopDelay(this.registry);
    }
  }

  /** Sets `idpool_dependency_up` from a readiness report's checks (`database`, `redis`; 'ok' = up). */
  recordDependencies(checks: Partial<Record<string, string>>): void {
    for (const dependency of ['database', 'redis', 'leaf_database', 'tinyid_database'])
      if (checks[dependency] !== undefined) this.dependencyUp.set({ dependency }, checks[dependency] === 'ok' ? 1 : 0);
  }

  /** Forgets the per-entity gauges of a retired entity (its counters count on: they add up in the totals). */
  forgetEntity(entity: string): void {
    for (const m of this.registry.getMetricsAsArray() as unknown[])
      if (m instanceof EntitySeries && m.type === 'gauge') m.remove({ entity });
  }

  /**
   * The Prometheus text: per-entity series of the busiest `metricsMaxEntities` only (by recent served or take rate),
   * and an `idpool_all_…` total over every entity beside each. All series stay in memory, so an entity back
   * among the busiest shows its true count, and totals never miss one.
   */
  async render(): Promise<{ contentType: string; body: string }> {
    const max = this.options.metricsMaxEntities;
    if (max === undefined) return { contentType: this.registry.contentType, body: await this.registry.metrics() };
    const families = this.registry.getMetricsAsArray() as unknown as Metric[];
    // A family with an `entity` label that is not an EntitySeries (one registered later) is read whole.
    const read = new Map<Metric, Family>();
    await Promise.all(
      families
        .filter((m) => hasEntityLabel(m) && !(m instanceof EntitySeries))
        .map(async (m) => read.set(m, await m.get())),
    );
    // Pooled entities, and snowflake and leasing ones that only have counts.
    const candidates = new Set<string>(this.poolSize.values.keys());
    for (const counted of [this.idsServed, this.rateLimited, this.exhausted, this.idsLeased])
      for (const key of counted.values.keys()) candidates.add(key);
    for (const family of read.values())
      for (const v of family.values) if (v.labels.entity !== undefined) candidates.add(String(v.labels.entity));
    const takeRates = new Map([...this.takeRate.values].filter(([, rate]) => Number.isFinite(rate)));
    const shown = busiest(max, candidates, this.options.recentServed?.() ?? new Map<string, number>(), takeRates);

    const kept = (v: Family['values'][number]) => v.labels.entity === undefined || shown.has(String(v.labels.entity));
    const out = new Registry();
    for (const m of families) {
      if (m instanceof EntitySeries) {
        out.registerMetric(fixed(m.family(shown)));
        if (m.total) out.registerMetric(fixed(m.totalFamily(m.total)));
        continue;
      }
      const family = read.get(m);
      out.registerMetric(family ? fixed({ ...family, values: family.values.filter(kept) }) : m);
    }
    return { contentType: out.contentType, body: await out.metrics() };
  }

  private entityGauge(name: string, help: string, total: Total = null): EntitySeries {
    return this.register(new EntitySeries(name, help, total));
  }

  private register<T extends EntitySeries>(series: T): T {
    this.registry.registerMetric(series as unknown as Metric);
    return series;
  }

  private entityCounter(name: string, help: string): EntitySeries {
    return this.register(new EntitySeries(name, help, 'sum', 'counter'));
  }

  private gauge<L extends string = never>(name: string, help: string, labelNames: L[] = []): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private counter<L extends string = never>(name: string, help: string, labelNames: L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }
}

function hasEntityLabel(m: Metric): boolean {
  return ((m as unknown as { labelNames?: string[] }).labelNames ?? []).includes('entity');
}

/** A family whose values are already read, in the shape a Registry renders (it calls `get()`). */
function fixed(family: Family): Metric {
  return { name: family.name, get: async () => family } as unknown as Metric;
}
