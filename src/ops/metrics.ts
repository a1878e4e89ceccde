import { Counter, Gauge, Histogram, type Metric, type MetricObjectWithValues, type MetricValue, Registry, collectDefaultMetrics } from 'prom-client';
import { busiest } from './busiest';

/**
 * How a per-entity family is summed up over every entity in `/metrics`
 * (`idpool_all_…`): counters and histograms add up, a pool-dry forecast
 * takes the soonest; offsets and watermarks have no meaningful total.
 */
type Total = 'sum' | 'min' | null;

/** Options of {@link OpsMetrics}. */
export interface OpsMetricsOptions {
  defaultMetrics?: boolean;
  /** Per-entity series for at most this many entities (IDPOOL_METRICS_MAX_ENTITIES); unlimited when unset. */
  maxEntities?: number;
  /** Ids per second each entity was served recently by this instance (ranks the busiest). */
  recentServed?: () => Map<string, number>;
}

/**
 * Every Prometheus metric idpool exports, on a registry of its own (no
 * prom-client global), so two services in one process (tests, the embedded
 * library) never share counters. Names and labels are documented in the
 * README ("Metrics and forecasts").
 */
export class OpsMetrics {
  readonly registry = new Registry();
  /** How each family labelled by `entity` is totalled over all entities (none when absent). */
  private readonly totals = new Map<string, Total>();

  // Pools (set by the sampler).
  readonly poolSize = this.gauge('idpool_pool_size', 'Ids ready in the pool', ['entity'], 'sum');
  readonly poolLowWatermark = this.gauge('idpool_pool_low_watermark', 'Pool size below which a refill starts', ['entity'], null);
  readonly poolTarget = this.gauge('idpool_pool_target', 'Pool size a refill tops up to: recent peak demand times IDPOOL_POOL_HORIZON_S, within [floor, max]', ['entity'], 'sum');
  readonly poolMax = this.gauge('idpool_pool_max', 'Ceiling of the pool size (max_pool_size)', ['entity'], 'sum');
  readonly currentOffset = this.gauge('idpool_current_offset', 'Next unreserved number of the entity (current_offset; exact below 2^53)', ['entity'], null);
  readonly takeRate = this.gauge('idpool_take_rate_ids_per_second', 'Ids taken per second by all consumers (estimated from reservations and pool size)', ['entity'], 'sum');
  readonly reserveRate = this.gauge('idpool_reserve_rate_per_second', 'Numbers reserved per second from the database', ['entity'], 'sum');

  // Forecasts (set by the sampler; +Inf when the rate is 0).
  readonly forecastPoolDry = this.gauge('idpool_forecast_pool_dry_seconds', 'Seconds until the pool is empty at the current take rate, without refills', ['entity'], 'min');
  readonly forecastJsSafe = this.gauge('idpool_forecast_js_safe_limit_seconds', 'Seconds until the highest reserved id passes 2^53 at the current take rate (0 = already past)', ['entity'], 'min');
  readonly forecastInt63 = this.gauge('idpool_forecast_int63_limit_seconds', 'Seconds until the highest reserved id passes 2^63 at the current take rate', ['entity'], 'min');
  readonly snowflakeTimeExhausted = this.gauge('idpool_snowflake_time_exhausted_timestamp_seconds', 'Unix time at which the snowflake layout runs out of timestamp bits', []);
  readonly snowflakeJsSafe = this.gauge('idpool_snowflake_js_safe_limit_timestamp_seconds', 'Unix time from which snowflake ids pass 2^53', []);

  // Hot-path counters.
  readonly idsServed = this.counter('idpool_ids_served_total', 'Ids handed out by this instance', ['entity']);
  readonly rateLimited = this.counter('idpool_rate_limited_total', 'Requests answered 429 rate_limited', ['entity']);
  readonly exhausted = this.counter('idpool_pool_exhausted_total', 'Requests answered 503 pool_exhausted', ['entity']);

  // Refiller.
  readonly refills = this.counter('idpool_refills_total', 'Refills that reserved and pushed a segment', ['entity']);
  readonly refillDuration = new Histogram({
    name: 'idpool_refill_duration_seconds',
    help: 'Time from reserving a segment to the end of its push',
    labelNames: ['entity'],
    // A refill is one SQL round trip plus pushes of 10k ids (~2 ms each):
    // milliseconds normally, up to seconds for a 5M-id pool.
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly segmentsReserved = this.counter('idpool_segments_reserved_total', 'Segments (steps) reserved from the database', ['entity']);
  readonly numbersReserved = this.counter('idpool_numbers_reserved_total', 'Numbers reserved from the database', ['entity']);
  readonly fenceRefusals = this.counter('idpool_fence_refusals_total', 'Segments refused by the fence and dropped', ['entity']);
  readonly poolsDiscarded = this.counter('idpool_pools_discarded_total', 'Pools discarded because they were filled on another Redis server', ['entity']);
  readonly redisServerChanges = this.counter('idpool_redis_server_changes_total', 'Times the Redis server was seen to change (restart, failover)', []);

  // HTTP.
  readonly httpDuration = new Histogram({
    name: 'idpool_http_request_duration_seconds',
    help: 'HTTP request duration by route template and status',
    labelNames: ['method', 'route', 'status'],
    // Id requests take well under a millisecond on a warm pool; the tail
    // buckets catch the shortage wait (250 ms) and slow dependencies.
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  // Worker lease (snowflake).
  readonly leaseHeld = this.gauge('idpool_worker_lease_held', '1 while this instance holds a usable worker lease', []);
  readonly leaseRemaining = this.gauge('idpool_worker_lease_remaining_seconds', 'Seconds until the worker lease expires unless renewed', []);
  readonly leaseWorkerId = this.gauge('idpool_worker_id', 'Worker id this instance holds (-1 = none)', []);
  readonly workersInUse = this.gauge('idpool_worker_ids_in_use', 'Worker ids with a live lease in this deployment range', []);
  readonly workersAvailable = this.gauge('idpool_worker_ids_in_range', 'Worker ids in this deployment range (IDPOOL_WORKER_MIN..MAX)', []);

  // Alarms.
  readonly alarmsRaised = this.counter('idpool_alarms_total', 'Alarms raised', ['alarm', 'severity']);

  constructor(private readonly options: OpsMetricsOptions = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    // Counters and histograms labelled by entity: all add up.
    for (const m of [this.idsServed, this.rateLimited, this.exhausted, this.refills, this.refillDuration, this.segmentsReserved, this.numbersReserved, this.fenceRefusals, this.poolsDiscarded]) {
      this.totals.set(nameOf(m), 'sum');
    }
  }

  /** Forgets the per-entity series of a retired entity. */
  forgetEntity(entity: string): void {
    for (const g of [this.poolSize, this.poolLowWatermark, this.poolTarget, this.poolMax, this.currentOffset, this.takeRate, this.reserveRate, this.forecastPoolDry, this.forecastJsSafe, this.forecastInt63]) {
      g.remove({ entity });
    }
  }

  /**
   * The Prometheus text: per-entity series of the busiest `maxEntities`
   * entities only (ids served here recently, or the deployment-wide take
   * rate, whichever is larger), and an `idpool_all_…` family beside each
   * per-entity one with the total over every entity. Every entity's series
   * stay in memory (counters keep counting), so an entity that comes back
   * into the busiest set shows its true count, and totals never miss one.
   */
  async render(): Promise<{ contentType: string; body: string }> {
    const max = this.options.maxEntities;
    if (max === undefined) return { contentType: this.registry.contentType, body: await this.registry.metrics() };
    const families = this.registry.getMetricsAsArray() as unknown as Metric[];
    const read = new Map<string, MetricObjectWithValues<MetricValue<string>>>();
    // Every family with an `entity` label is capped, also ones added later without a total rule.
    await Promise.all(
      families.filter(hasEntityLabel).map(async (m) => read.set(nameOf(m), (await m.get()) as MetricObjectWithValues<MetricValue<string>>)),
    );
    const candidates = new Set<string>();
    for (const family of read.values()) for (const v of family.values) if (v.labels.entity !== undefined) candidates.add(String(v.labels.entity));
    const takeRates = new Map<string, number>();
    for (const v of read.get(nameOf(this.takeRate))?.values ?? []) if (Number.isFinite(v.value)) takeRates.set(String(v.labels.entity), v.value);
    const shown = busiest(max, candidates, this.options.recentServed?.() ?? new Map(), takeRates);

    const out = new Registry();
    for (const m of families) {
      const family = read.get(nameOf(m));
      if (!family) {
        out.registerMetric(m);
        continue;
      }
      const kept = { ...family, values: family.values.filter((v) => v.labels.entity === undefined || shown.has(String(v.labels.entity))) };
      out.registerMetric(fixed(kept));
      const total = this.totals.get(family.name);
      if (total) out.registerMetric(fixed(totalOf(family, total)));
    }
    return { contentType: out.contentType, body: await out.metrics() };
  }

  private gauge<L extends string>(name: string, help: string, labelNames: L[], total?: Total): Gauge<L> {
    if (total !== undefined) this.totals.set(name, total);
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }
}

function hasEntityLabel(m: Metric): boolean {
  return ((m as unknown as { labelNames?: string[] }).labelNames ?? []).includes('entity');
}

function nameOf(m: Metric): string {
  return (m as unknown as { name: string }).name;
}

/** A family whose values are already read, in the shape a Registry renders (it calls `get()`). */
function fixed(family: MetricObjectWithValues<MetricValue<string>>): Metric {
  return { name: family.name, get: async () => family } as unknown as Metric;
}

/** `idpool_x` → `idpool_all_x`, over every entity: one series (or one per bucket) without the `entity` label. */
function totalOf(family: MetricObjectWithValues<MetricValue<string>>, total: 'sum' | 'min'): MetricObjectWithValues<MetricValue<string>> {
  const rename = (n: string) => n.replace(/^idpool_/, 'idpool_all_');
  const groups = new Map<string, MetricValue<string> & { metricName?: string }>();
  for (const v of family.values as Array<MetricValue<string> & { metricName?: string }>) {
    const { entity: _entity, ...labels } = v.labels;
    const id = `${v.metricName ?? ''}\u0000${JSON.stringify(labels)}`;
    const seen = groups.get(id);
    if (!seen) groups.set(id, { ...v, labels, ...(v.metricName ? { metricName: rename(v.metricName) } : {}) });
    else seen.value = total === 'sum' ? seen.value + v.value : Math.min(seen.value, v.value);
  }
  const help = total === 'sum' ? `${family.help} (total over all entities)` : `${family.help} (the soonest over all entities)`;
  return { ...family, name: rename(family.name), help, values: [...groups.values()] };
}
