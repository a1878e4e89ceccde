import type { Clock } from '../clock';
import type { AlarmRules, ClockView } from './alarm-rules';
import type { SnowflakeForecast } from './forecast';
import type { OpsMetrics } from './metrics';

/** This instance's worker lease as the ops side sees it (snowflake mode). */
export interface LeaseView {
  status(): { workerId: number | undefined; held: boolean; expiresAt?: number };
  /** Worker ids of this deployment's range, and how many have a live lease. */
  usage?(): Promise<{ inUse: number; total: number }>;
}

/** Worker usage reads every worker row: every 10 s is plenty for a range that fills over hours. */
const USAGE_EVERY_MS = 10_000;

export interface SnowflakeSamplingOptions {
  metrics: OpsMetrics;
  clock: Clock;
  /** Read when first needed: the snowflake layout is built after the pool side. */
  snowflake?: () => SnowflakeForecast | undefined;
  lease?: LeaseView;
  clockWatch?: ClockView;
}

/**
 * The snowflake side of an ops sampling run: this instance's worker lease
 * and its range's use, and the snowflake layout's forecasts, as gauges and
 * through the alarm rules. The sampler runs both each run, guarded like its
 * entity steps.
 */
export class SnowflakeSampling {
  private lastUsageAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly options: SnowflakeSamplingOptions,
    private readonly rules: Pick<AlarmRules, 'checkLease' | 'checkWorkerRange' | 'checkSnowflake' | 'checkClockSkew'>,
  ) {}

  /** The lease's gauges and alarm; the range's use at most every {@link USAGE_EVERY_MS}. */
  async sampleLease(): Promise<void> {
    const lease = this.options.lease;
    if (!lease) return;
    const { metrics } = this.options;
    const status = lease.status();
    const now = this.options.clock.now();
    metrics.leaseHeld.set(status.held ? 1 : 0);
    metrics.leaseWorkerId.set(status.workerId ?? -1);
    metrics.leaseRemaining.set(
      status.held && status.expiresAt !== undefined ? Math.max(0, (status.expiresAt - now) / 1000) : 0,
    );
    this.rules.checkLease(status);
    if (lease.usage && now - this.lastUsageAt >= USAGE_EVERY_MS) {
      this.lastUsageAt = now;
      const { inUse, total } = await lease.usage();
      metrics.workersInUse.set(inUse);
      metrics.workersAvailable.set(total);
      this.rules.checkWorkerRange(inUse, total);
    }
  }

  /** The clock's skews (`idpool_clock_skew_seconds`) and the `clock_skew` alarm. */
  sampleClock(): void {
    const watch = this.options.clockWatch;
    if (!watch) return;
    for (const r of watch.skews())
      if (r.skewMs !== null) this.options.metrics.clockSkew.set({ against: r.against }, r.skewMs / 1000);
    this.rules.checkClockSkew(watch);
  }

  /** The snowflake forecasts' gauges and alarms. */
  checkSnowflake(): void {
    const sf = this.options.snowflake?.();
    if (!sf) return;
    this.options.metrics.snowflakeTimeExhausted.set(sf.timeExhaustedAt / 1000);
    this.options.metrics.snowflakeJsSafe.set(
      sf.jsSafeLimitAt === undefined ? Number.POSITIVE_INFINITY : sf.jsSafeLimitAt / 1000,
    );
    this.rules.checkSnowflake(sf, this.options.clock.now());
  }
}
