import { ConfigError } from '../config/config';

/**
 * Timing of worker leases and snowflake waits. Read from the environment
 * next to the layout (`IDPOOL_SNOWFLAKE_*`, `IDPOOL_WORKER_*`).
 */
export interface LeaseSettings {
  /** A lease not renewed for this long (database clock) may be taken by another instance. */
  ttlMs: number;
  /** The holder stops issuing this long before the TTL (its own monotonic clock), to cover drift and slow renewals. */
  marginMs: number;
  /** Heartbeat (renewal) period, whole seconds (node-cron's finest unit). */
  heartbeatSeconds: number;
  /** Start-up is refused when the local clock and the database's differ by more than this. */
  maxClockSkewMs: number;
}

export interface SnowflakeRuntimeSettings extends LeaseSettings {
  /** Longest wait for a request (second clock rollback, exhausted sequence) before 503 `unavailable`. */
  maxWaitMs: number;
}

/**
 * Defaults: a 15 s TTL renewed every 3 s survives four missed heartbeats;
 * stopping 3 s early leaves room for a slow UPDATE and clock drift.
 * 1 s of skew is far above what NTP-synced hosts show (a few ms) and far
 * below the TTL.
 */
export const DEFAULT_RUNTIME: Readonly<SnowflakeRuntimeSettings> = {
  ttlMs: 15_000,
  marginMs: 3_000,
  heartbeatSeconds: 3,
  maxClockSkewMs: 1_000,
  maxWaitMs: 1_000,
};

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}

/** Reads the lease and wait settings; throws {@link ConfigError} naming the variable. */
export function runtimeSettingsFromEnv(env: Env = process.env): SnowflakeRuntimeSettings {
  const ttlMs = integer(env, 'IDPOOL_WORKER_LEASE_TTL_MS', DEFAULT_RUNTIME.ttlMs, 3_000, 3_600_000);
  const marginMs = integer(env, 'IDPOOL_WORKER_LEASE_MARGIN_MS', Math.min(DEFAULT_RUNTIME.marginMs, Math.floor(ttlMs / 5)), 0, ttlMs - 2_000);
  const room = ttlMs - marginMs;
  // At least two heartbeats must fit before the lease would lapse, so one slow or lost renewal is survived.
  const heartbeatMax = Math.min(59, Math.floor(room / 2000));
  const heartbeatSeconds = integer(env, 'IDPOOL_WORKER_HEARTBEAT_SECONDS', Math.min(DEFAULT_RUNTIME.heartbeatSeconds, heartbeatMax), 1, heartbeatMax);
  return {
    ttlMs,
    marginMs,
    heartbeatSeconds,
    maxClockSkewMs: integer(env, 'IDPOOL_MAX_CLOCK_SKEW_MS', DEFAULT_RUNTIME.maxClockSkewMs, 0, 60_000),
    maxWaitMs: integer(env, 'IDPOOL_SNOWFLAKE_MAX_WAIT_MS', DEFAULT_RUNTIME.maxWaitMs, 0, 60_000),
  };
}
