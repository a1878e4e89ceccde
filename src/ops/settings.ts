// Without metrics or alarms code: config/ maps the environment onto these.

export type RequestLogMode = 'all' | 'errors' | 'off';

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
  /** A business-number period's forecast takes its rate over this long (`forecast_period_exhausted`). */
  periodRateWindowMs: number;
  /** Dashboard chart history. */
  historyMs: number;
  /** Which HTTP requests get a log line: every one, non-2xx and slow ones, or none. */
  requestLog: RequestLogMode;
  /** With `errors`, a 2xx request this slow (ms) is logged too. */
  requestLogSlowMs: number;
  /** `/metrics` has per-entity series for at most this many entities (the busiest), totals for all. */
  metricsMaxEntities: number;
  /** An instance whose heartbeat is older than this is gone (IDPOOL_INSTANCE_TTL_MS). */
  instanceTtlMs: number;
}

/** Defaults of {@link OpsConfig}; where a number is tuned, the comment says where it comes from. */
export const DEFAULT_OPS: Readonly<OpsConfig> = {
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
  // Fifteen minutes: a burst of a minute or two (a batch import) does not
  // promise a run-out on its own, and a rush that began a quarter hour ago
  // warns with most of a day still ahead. The period's average since its
  // start would hide a rush behind a quiet night; a minute would flap.
  periodRateWindowMs: 900_000,
  // Ten minutes of chart.
  historyMs: 600_000,
  // A line per request costs the single-id route 10-12 % of its throughput
  // (docs/benchmarks.md, request log `all` against `off`): by default only
  // the answers worth reading.
  requestLog: 'errors',
  // Ten times the single-id route's p99 at 64 connections on 2 cores.
  requestLogSlowMs: 250,
  // 200 entities × ~15 per-entity series ≈ 3,000 series per instance: a
  // small share of what one Prometheus handles, whatever the entity count.
  metricsMaxEntities: 200,
  // Ten seconds: ten heartbeats (one a second), so a GC pause or a Redis
  // failover of a few seconds does not call a live instance gone, and a
  // killed one is seen gone within the time a load balancer takes to notice.
  instanceTtlMs: 10_000,
};
