/**
 * When a business-number period runs out of digits (docs/numbers.md,
 * "Capacity and alarms"): pure functions of samples of the period's use,
 * so the rate, the period's end, the zone and a daylight-saving day are
 * tested on a fake clock. The sampler feeds them (`sampler.ts`).
 */
import type { NumberUsage } from '../pool/period-pools';
import { isoDate, round } from './format';

/** One reading of a period's use. */
export interface PeriodSample {
  /** By the clock that decides the period (Unix ms). */
  readonly at: number;
  readonly used: bigint;
}

/** What a period forecast is made of. */
export interface PeriodForecast {
  /** Numbers taken per second over the window (0 with fewer than two readings). */
  readonly takePerSecond: number;
  /** When the period's numbers run out at that rate (Unix ms): now when already full, undefined when nothing is taken. */
  readonly runsOutAt: number | undefined;
  /** Whether that is before the period ends: the `forecast_period_exhausted` condition. */
  readonly beforeEnd: boolean;
}

/**
 * Readings of one period, at most `MAX_KEPT` of them spread over the
 * window: an hour-long window sampled every second keeps ~60 readings, not
 * 3,600 per entity.
 */
const MAX_KEPT = 60;

/**
 * The readings of one entity's current period over a window: a new period
 * starts a new history (its sequence restarts at 1, so a rate across the
 * boundary would be negative), and readings older than the window are let
 * go except the newest of them, which anchors the rate at the window's start.
 */
export class PeriodHistory {
  private periodId: string | undefined;
  private samples: PeriodSample[] = [];

  constructor(private readonly windowMs: number) {}

  /**
   * Adds a reading of period `periodId`. A reading below the newest (Redis
   * restored from a backup, its counters behind) starts over too: a rate
   * from before the fall would read as nothing taken for a whole window.
   */
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
   * Numbers taken per second over the window (docs/numbers.md): those used
   * between the reading at (or just before) its start and the newest, over
   * the window's length, or the time since the period began when that is
   * shorter. Readings that cover less of it (a fresh instance, a burst just
   * seen) are spread over the whole window, so a burst alone promises no
   * run-out; 0 before two readings.
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

/**
 * When the period runs out: `capacity − used` more numbers at
 * `takePerSecond`, from `now`. Already full: now. Nothing taken: never.
 */
export function periodForecast(
  usage: Pick<NumberUsage, 'now' | 'used' | 'capacity'> & { period: { end: number } },
  takePerSecond: number,
): PeriodForecast {
  const left = usage.capacity - usage.used;
  const runsOutAt =
    left <= 0n ? usage.now : takePerSecond > 0 ? usage.now + (Number(left) / takePerSecond) * 1000 : undefined;
  return { takePerSecond, runsOutAt, beforeEnd: runsOutAt !== undefined && runsOutAt < usage.period.end };
}

/**
 * The run-out time as the zone's people read it: `14:20` on the day it is
 * now in the zone, else `2026-11-29 14:20` (a monthly or yearly period).
 */
export function runOutText(wallClock: (ms: number) => string, now: number, at: number): string {
  const then = wallClock(at);
  return then.slice(0, 10) === wallClock(now).slice(0, 10) ? then.slice(11) : then;
}

/** The latest reading of one business-number entity and its forecast (the dashboard row, `GET /admin/apps`). */
export interface NumberView {
  readonly usage: NumberUsage;
  readonly forecast: PeriodForecast;
  /**
   * Numbers taken per second over IDPOOL_OPS_RATE_WINDOW_MS, as a pool's take
   * rate (the dashboard row's and `/metrics`'); the forecast's is over the
   * longer window. Set by the sampler.
   */
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

/** A business-number entity's period as JSON: the dashboard row's and `GET /admin/apps`'s `period`. */
export interface NumberPeriodJson {
  id: string;
  /** First instant and the first after it, ISO 8601 UTC; `end` null for `never`. */
  start: string;
  end: string | null;
  /** The same two instants as the entity's zone reads them, labelled (`2026-11-29 00:00 (Asia/Shanghai)`). */
  startLocal: string;
  endLocal: string | null;
  timeZone: string;
  /** Decimal strings: a period holds up to 10^18 − 1. */
  used: string;
  capacity: string;
  digits: number;
  usedPercent: number;
  ready: number;
  takePerSecond: number;
  /** When the numbers run out at that rate (null: nothing taken), in UTC and as the zone reads it. */
  runsOutAt: string | null;
  runsOutLocal: string | null;
  /** Before the period ends: the `forecast_period_exhausted` alarm. */
  runsOutBeforeEnd: boolean;
}

export function numberPeriodJson(view: NumberView): NumberPeriodJson {
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
