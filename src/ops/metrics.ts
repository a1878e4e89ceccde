import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every Prometheus metric idpool exports, on a registry of its own (no
 * prom-client global), so two services in one process (tests, the embedded
 * library) never share counters. Names and labels are documented in the
 * README ("Metrics and forecasts").
 */
export class OpsMetrics {
  readonly registry = new Registry();

  // Pools (set by the sampler).
  readonly poolSize = this.gauge('idpool_pool_size', 'Ids ready in the pool', ['entity']);
  readonly poolLowWatermark = this.gauge('idpool_pool_low_watermark', 'Pool size below which a refill starts', ['entity']);
  readonly poolMax = this.gauge('idpool_pool_max', 'Pool size a refill tops up to (max_pool_size)', ['entity']);
  readonly currentOffset = this.gauge('idpool_current_offset', 'Next unreserved number of the entity (current_offset; exact below 2^53)', ['entity']);
  readonly takeRate = this.gauge('idpool_take_rate_ids_per_second', 'Ids taken per second by all consumers (estimated from reservations and pool size)', ['entity']);
  readonly reserveRate = this.gauge('idpool_reserve_rate_per_second', 'Numbers reserved per second from the database', ['entity']);

  // Forecasts (set by the sampler; +Inf when the rate is 0).
  readonly forecastPoolDry = this.gauge('idpool_forecast_pool_dry_seconds', 'Seconds until the pool is empty at the current take rate, without refills', ['entity']);
  readonly forecastJsSafe = this.gauge('idpool_forecast_js_safe_limit_seconds', 'Seconds until the highest reserved id passes 2^53 at the current take rate (0 = already past)', ['entity']);
  readonly forecastInt63 = this.gauge('idpool_forecast_int63_limit_seconds', 'Seconds until the highest reserved id passes 2^63 at the current take rate', ['entity']);
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

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Forgets the per-entity series of a retired entity. */
  forgetEntity(entity: string): void {
    for (const g of [this.poolSize, this.poolLowWatermark, this.poolMax, this.currentOffset, this.takeRate, this.reserveRate, this.forecastPoolDry, this.forecastJsSafe, this.forecastInt63]) {
      g.remove({ entity });
    }
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private gauge<L extends string>(name: string, help: string, labelNames: L[]): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }
}
