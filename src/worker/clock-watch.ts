import type { Clock } from '../clock';
import { type Periodic, every } from '../schedule';

/** Every 5 s: a clock stepped by hand or by a bad NTP source is caught within seconds, at two tiny reads per period. */
export const DEFAULT_CLOCK_CHECK_MS = 5_000;

/** A clock this instance compares its own with: Redis's (TIME) or the database's. */
export interface ClockReference {
  readonly name: 'redis' | 'database';
  /** The reference's time now, in Unix ms. */
  now(): Promise<number>;
}

/** One comparison: this instance's clock minus the reference's (positive: this one is ahead). */
export interface ClockSkewReading {
  readonly against: ClockReference['name'];
  /** Null until read, and while the reference does not answer (a reference away is not a skew). */
  readonly skewMs: number | null;
  /** Half the round trip of the read: the skew is known to within this. */
  readonly uncertaintyMs: number;
}

/**
 * This instance's clock against Redis's and the database's every `intervalMs` while it runs, not only
 * at the lease's start (docs/snowflake.md "Clocks"). A skew counts only beyond the read's own
 * uncertainty, so a slow answer is no skew.
 */
export class ClockWatch {
  private readonly readings = new Map<ClockReference['name'], ClockSkewReading>();
  private readonly schedule: Periodic;

  constructor(
    private readonly options: {
      clock: Clock;
      references: readonly ClockReference[];
      maxSkewMs: number;
      intervalMs: number;
    },
  ) {
    for (const r of options.references) this.readings.set(r.name, { against: r.name, skewMs: null, uncertaintyMs: 0 });
    this.schedule = every(options.intervalMs, () => this.check(), options.clock);
  }

  start(): void {
    this.schedule.start();
    void this.schedule.runNow();
  }

  stop(): Promise<void> {
    return this.schedule.stop();
  }

  /** Reads every reference (a failing one as unknown), then records them together, never one new beside one old. */
  async check(): Promise<void> {
    const readings = await Promise.all(
      this.options.references.map(async (r): Promise<ClockSkewReading> => {
        const before = this.options.clock.now();
        const t0 = this.options.clock.monotonic();
        try {
          const theirs = await r.now();
          const roundTrip = this.options.clock.monotonic() - t0;
          return { against: r.name, skewMs: Math.round(before + roundTrip / 2 - theirs), uncertaintyMs: roundTrip / 2 };
        } catch {
          return { against: r.name, skewMs: null, uncertaintyMs: 0 };
        }
      }),
    );
    for (const reading of readings) this.readings.set(reading.against, reading);
  }

  /** The latest reading against each reference. */
  skews(): ClockSkewReading[] {
    return [...this.readings.values()];
  }

  /** The largest skew known beyond its uncertainty (0 when none is). */
  worstSkewMs(): number {
    let worst = 0;
    for (const r of this.readings.values()) {
      if (r.skewMs === null) continue;
      const beyond = Math.abs(r.skewMs) - r.uncertaintyMs;
      if (beyond > Math.abs(worst)) worst = Math.sign(r.skewMs) * beyond;
    }
    return worst;
  }

  /** Where this instance's clock stands against the bound: within it, past half of it (the alarm), past it (snowflake ids refused). */
  state(): 'ok' | 'alarm' | 'refusing' {
    const worst = Math.abs(this.worstSkewMs());
    if (worst > this.options.maxSkewMs) return 'refusing';
    return worst > this.options.maxSkewMs / 2 ? 'alarm' : 'ok';
  }

  /** Seconds until the next check: a refused client's Retry-After. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.options.intervalMs / 1000));
  }

  get maxSkewMs(): number {
    return this.options.maxSkewMs;
  }
}
