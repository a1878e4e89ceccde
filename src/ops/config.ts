import { ConfigError } from '../config/config';

/** Settings of metrics, forecasts and alarms (README "Alarms"); defaults in one place. */
export interface OpsConfig {
  /** POST alarms here as JSON (IDPOOL_ALERT_WEBHOOK_URL); unset = log only. */
  alertWebhookUrl: string | undefined;
  /** A given alarm is posted at most once per this many ms (IDPOOL_ALERT_DEDUPE_MS). */
  alertDedupeMs: number;
  /** Forecasts due within this many days alarm (IDPOOL_ALERT_HORIZON_DAYS). */
  alertHorizonDays: number;
  /** `forecast_pool_dry` when a pool would be empty within this many seconds (IDPOOL_ALERT_POOL_DRY_SECONDS). */
  alertPoolDrySeconds: number;
  /** `pool_low` below this percent of the low watermark (IDPOOL_ALERT_POOL_LOW_PERCENT). */
  alertPoolLowPercent: number;
  /** `worker_range_nearly_full` at this percent of worker ids leased (IDPOOL_ALERT_WORKER_RANGE_PERCENT). */
  alertWorkerRangePercent: number;
  /** Sampling period of pool sizes and offsets (IDPOOL_OPS_SAMPLE_MS). */
  sampleMs: number;
  /** Forecast rates are averaged over this long (IDPOOL_OPS_RATE_WINDOW_MS). */
  rateWindowMs: number;
  /** Dashboard chart history (IDPOOL_OPS_HISTORY_MS). */
  historyMs: number;
  /** One log line per HTTP request (IDPOOL_REQUEST_LOG); on by default. */
  requestLog: boolean;
}

export const OPS_DEFAULTS: OpsConfig = {
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
  // Ten minutes of chart.
  historyMs: 600_000,
  requestLog: true,
};

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** Reads the ops settings from the environment; throws {@link ConfigError} naming the variable. */
export function loadOpsConfig(env: Env = process.env): OpsConfig {
  const url = env.IDPOOL_ALERT_WEBHOOK_URL || undefined;
  if (url !== undefined) {
    let ok = false;
    try {
      ok = /^https?:$/.test(new URL(url).protocol);
    } catch {
      ok = false;
    }
    // The URL may carry a token: never echo it.
    if (!ok) throw new ConfigError('IDPOOL_ALERT_WEBHOOK_URL', 'must be an http:// or https:// URL');
  }
  const log = env.IDPOOL_REQUEST_LOG;
  if (log !== undefined && log !== '' && !/^(0|1|true|false|on|off)$/i.test(log)) {
    throw new ConfigError('IDPOOL_REQUEST_LOG', `must be true or false, got "${log}"`);
  }
  return {
    alertWebhookUrl: url,
    alertDedupeMs: int(env, 'IDPOOL_ALERT_DEDUPE_MS', OPS_DEFAULTS.alertDedupeMs, 0, 7 * 86_400_000),
    alertHorizonDays: int(env, 'IDPOOL_ALERT_HORIZON_DAYS', OPS_DEFAULTS.alertHorizonDays, 1, 36_500),
    alertPoolDrySeconds: int(env, 'IDPOOL_ALERT_POOL_DRY_SECONDS', OPS_DEFAULTS.alertPoolDrySeconds, 0, 86_400),
    alertPoolLowPercent: int(env, 'IDPOOL_ALERT_POOL_LOW_PERCENT', OPS_DEFAULTS.alertPoolLowPercent, 0, 100),
    alertWorkerRangePercent: int(env, 'IDPOOL_ALERT_WORKER_RANGE_PERCENT', OPS_DEFAULTS.alertWorkerRangePercent, 1, 100),
    sampleMs: int(env, 'IDPOOL_OPS_SAMPLE_MS', OPS_DEFAULTS.sampleMs, 50, 60_000),
    rateWindowMs: int(env, 'IDPOOL_OPS_RATE_WINDOW_MS', OPS_DEFAULTS.rateWindowMs, 1000, 3_600_000),
    historyMs: int(env, 'IDPOOL_OPS_HISTORY_MS', OPS_DEFAULTS.historyMs, 10_000, 3_600_000),
    requestLog: log === undefined || log === '' ? true : /^(1|true|on)$/i.test(log),
  };
}
