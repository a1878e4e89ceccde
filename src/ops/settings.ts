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
  // A flapping pool posts a handful of times an hour; a lasting condition is re-announced.
  alertDedupeMs: 600_000,
  // Thirty days: time to plan a migration (new entity, wider layout).
  alertHorizonDays: 30,
  // Ten seconds: a database hiccup that long would exhaust the pool.
  alertPoolDrySeconds: 10,
  // The refiller tops up at the watermark within a tick: this low, refills are failing or slow.
  alertPoolLowPercent: 50,
  alertWorkerRangePercent: 90,
  // One second: one LLEN pipeline and one SQL query a second per instance.
  sampleMs: 1000,
  rateWindowMs: 60_000,
  // A burst of a minute or two (a batch import) promises no run-out, a rush begun a quarter hour ago warns
  // with most of a day ahead; the period's average would hide a rush behind a quiet night, a minute would flap.
  periodRateWindowMs: 900_000,
  historyMs: 600_000,
  // A line per request costs the single-id route 10-12 % of its throughput (docs/benchmarks.md, `all` vs `off`).
  requestLog: 'errors',
  // Ten times the single-id route's p99 at 64 connections on 2 cores.
  requestLogSlowMs: 250,
  // 200 entities × ~15 series ≈ 3,000 per instance: a small share of one Prometheus, whatever the entity count.
  metricsMaxEntities: 200,
  // Ten heartbeats: a GC pause or failover of seconds is not "gone"; a killed one is seen as fast as an LB would.
  instanceTtlMs: 10_000,
};
