// When a business-number period runs out of digits (docs/numbers.md, "Capacity and alarms"): pure functions
// of the period's use, so rate, period end, zone and a daylight-saving day are tested on a fake clock.
import type { NumberUsage } from '../pool/period-pools';
import { isoDate, round } from './format';

/** One reading of a period's use. */
export interface PeriodSample {
  /** By the clock that decides the period (Unix ms). */
  readonly at: number;
  readonly used: bigint;
}

export interface PeriodForecast {
  /** Numbers taken per second over the window (0 with fewer than two readings). */
  readonly takePerSecond: number;
  /** When the period's numbers run out at that rate (Unix ms): now when already full, undefined when nothing is taken. */
  readonly runsOutAt: number | undefined;
  /** Whether that is before the period ends: the `forecast_period_exhausted` condition. */
  readonly beforeEnd: boolean;
}

/** Readings kept of one period, spread over the window: an hour sampled every second keeps ~60, not 3,600. */
const MAX_KEPT = 60;

/**
 * The readings of one entity's current period over a window: a new period starts anew (its sequence restarts,
 * a rate across it would be negative); of those older than the window the newest stays, anchoring its start.
 */
export class PeriodHistory {
  private periodId: string | undefined;
  private samples: PeriodSample[] = [];

  constructor(private readonly windowMs: number) {}

  /** Adds a reading; one below the newest (Redis restored behind) starts over too, or the window would read idle. */
  record(periodId: string, sample: PeriodSample): void {
    const newest = this.samples.at(-1);
    if (periodId !== this.periodId || (newest !== undefined && sample.used < newest.used)) {
      this.periodId = periodId;
      this.samples = [];
    }
    const s = this.samples;
    // Readings closer together than a sixtieth of the window: the newest replaces the last (the rate needs only the ends).
    if (s.length >= 2 && sample.at - s[s.length - 2].at < this.windowMs / MAX_KEPT) s[s.length - 1] = sample;
    else s.push(sample);
    while (s.length > 2 && sample.at - s[1].at >= this.windowMs) s.shift();
  }

  /**
   * Numbers taken per second over the window, or since the period began when shorter (docs/numbers.md).
   * Readings covering less (a fresh instance) are spread over all of it: a burst alone promises no run-out.
   */
  takePerSecond(periodStart: number): number {
    if (this.samples.length < 2) return 0;
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    const span = Math.max(last.at - first.at, Math.min(this.windowMs, last.at - periodStart));
    if (span <= 0) return 0;
    const taken = Number(last.used - first.used);
    return taken > 0 ? taken / (span / 1000) : 0;
  }
}

/** When the period runs out at `takePerSecond`: now when already full, never (undefined) when nothing is taken. */
export function periodForecast(
  usage: Pick<NumberUsage, 'now' | 'used' | 'capacity'> & { period: { end: number } },
  takePerSecond: number,
): PeriodForecast {
  const left = usage.capacity - usage.used;
  const runsOutAt =
    left <= 0n ? usage.now : takePerSecond > 0 ? usage.now + (Number(left) / takePerSecond) * 1000 : undefined;
  return { takePerSecond, runsOutAt, beforeEnd: runsOutAt !== undefined && runsOutAt < usage.period.end };
}

/** The run-out time as the zone reads it: `14:20` on today's date there, else `2026-11-29 14:20`. */
export function runOutText(wallClock: (ms: number) => string, now: number, at: number): string {
  const then = wallClock(at);
  return then.slice(0, 10) === wallClock(now).slice(0, 10) ? then.slice(11) : then;
}

/** The latest reading of one business-number entity and its forecast (the dashboard row, `GET /admin/apps`). */
export interface NumberView {
  readonly usage: NumberUsage;
  readonly forecast: PeriodForecast;
  /** Taken per second over IDPOOL_OPS_RATE_WINDOW_MS, as a pool's (the forecast's window is longer); the sampler's. */
  readonly takePerSecond?: number;
  /** The run-out time in the entity's zone (`14:20`, or with its date when not today there); undefined when never. */
  readonly runsOutLocal: string | undefined;
  /** The period's first instant and the first after it as the zone's clock reads them, labelled (`2026-11-29 00:00 (Asia/Shanghai)`); end undefined for `never`. */
  readonly startLocal: string;
  readonly endLocal: string | undefined;
}

/** The view of `usage` at `takePerSecond`: its forecast, and the run-out as `wallClock` (the entity's zone) reads it. */
export function numberView(usage: NumberUsage, takePerSecond: number, wallClock: (ms: number) => string): NumberView {
  const forecast = periodForecast(usage, takePerSecond);
  const runsOutLocal =
    forecast.runsOutAt === undefined ? undefined : runOutText(wallClock, usage.now, forecast.runsOutAt);
  const { start, end, id } = usage.period;
  return {
    usage,
    forecast,
    runsOutLocal,
    startLocal: `${wallClock(start)} (${usage.timeZone})`,
    endLocal: id === 'all' ? undefined : `${wallClock(end)} (${usage.timeZone})`,
  };
}

/** A business-number entity's period as JSON (the dashboard's and `GET /admin/apps`'s; OpenAPI `NumberPeriod`). */
export function numberPeriodJson(view: NumberView) {
  const { usage, forecast } = view;
  const { period } = usage;
  return {
    id: period.id,
    start: new Date(period.start).toISOString(),
    end: period.id === 'all' ? null : isoDate(period.end),
    startLocal: view.startLocal,
    endLocal: view.endLocal ?? null,
    timeZone: usage.timeZone,
    used: usage.used.toString(),
    capacity: usage.capacity.toString(),
    digits: usage.digits,
    usedPercent: usage.capacity > 0n ? round((Number(usage.used) * 100) / Number(usage.capacity)) : 0,
    ready: usage.ready,
    takePerSecond: round(forecast.takePerSecond),
    runsOutAt: isoDate(forecast.runsOutAt),
    runsOutLocal: view.runsOutLocal ?? null,
    runsOutBeforeEnd: forecast.beforeEnd,
  };
}

export type NumberPeriodJson = ReturnType<typeof numberPeriodJson>;
