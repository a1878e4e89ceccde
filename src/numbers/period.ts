/**
 * Periods (docs/numbers.md): every instant whose calendar fields, cut to the reset's unit, are the same. A DST day
 * has 23 or 25 hours; a repeated hour is one hourly period of two hours (its numbers share `{HH}`, so one
 * sequence); a skipped hour is no period.
 */
import type { CalendarFields, TimeZone } from './zone';

export const RESETS = ['never', 'yearly', 'monthly', 'daily', 'hourly'] as const;
export type Reset = (typeof RESETS)[number];

/** One period of one zone. */
export interface Period {
  /** Its calendar fields cut to the reset (`2026`, `20261128`, `2026112814`; `all`): fixed width, so names sort. */
  readonly id: string;
  /** First instant in it and first after it (Unix ms); `end` is {@link NEVER_ENDS} for `never`. */
  readonly start: number;
  readonly end: number;
  /** The period's date, the fields below the reset's unit at their first value. */
  readonly date: CalendarFields;
}

/** The last instant a JavaScript Date holds: the end of the one period of `never`. */
const NEVER_ENDS = 8.64e15;
const ID_WIDTH = { never: 0, yearly: 4, monthly: 6, daily: 8, hourly: 10 } as const;
/** Far enough either side of a period's wall-clock instant to hold its real start: offsets stay within ±14 h, a DST shift adds 1–2 h. */
const SEARCH_MS = 36 * 3600_000;

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** A period's name from calendar fields (see {@link Period.id}). */
export function periodId(f: CalendarFields, reset: Reset): string {
  if (reset === 'never') return 'all';
  return (pad(f.year, 4) + pad(f.month, 2) + pad(f.day, 2) + pad(f.hour, 2)).slice(0, ID_WIDTH[reset]);
}

// The calendar fields a period id names, units below its reset at their first value.
function periodDate(id: string, reset: Reset): CalendarFields | undefined {
  if (reset === 'never') return id === 'all' ? { year: 1970, month: 1, day: 1, hour: 0 } : undefined;
  const full = /^(\d{4})(\d\d)(\d\d)(\d\d)$/.exec(id + '010100'.slice(id.length - 4));
  if (id.length !== ID_WIDTH[reset] || !full) return undefined;
  const [year, month, day, hour] = full.slice(1).map(Number);
  // A real date and hour reads back as itself (month 13, day 31 of a short month, hour 24 roll over).
  const back = new Date(Date.UTC(year, month - 1, day, hour)).toISOString().slice(0, 13).replace(/\D/g, '');
  return year >= 1970 && back === full[0] ? { year, month, day, hour } : undefined;
}

/**
 * The periods of one reset in one zone, found from the zone's calendar fields alone (a binary search for a
 * period's bounds), so offset zones, IANA zones and DST days go through the same code.
 */
export class PeriodCalendar {
  /** The last two periods found: a take asks for now's and the next (`after`), so neither pushes the other out. */
  private last: Period | undefined;
  private before: Period | undefined;

  constructor(
    readonly reset: Reset,
    readonly zone: TimeZone,
  ) {}

  /** The period holding instant `ms`. */
  at(ms: number): Period {
    const { last, before } = this;
    if (last && ms >= last.start && ms < last.end) return last;
    if (before && ms >= before.start && ms < before.end) return before;
    const period = this.compute(ms);
    this.before = last;
    this.last = period;
    return period;
  }

  /** The period after `period` (none after `never`'s: it ends at {@link NEVER_ENDS}). */
  after(period: Period): Period | undefined {
    return period.end >= NEVER_ENDS ? undefined : this.at(period.end);
  }

  /** The period named `id`, if this calendar has one by that name (an hour a DST jump skips has none). */
  named(id: string): Period | undefined {
    const date = periodDate(id, this.reset);
    if (!date) return undefined;
    if (this.reset === 'never') return this.at(0);
    const wall = this.utc(date);
    const period = this.at(this.firstWhere(wall - SEARCH_MS, wall + SEARCH_MS, (key) => key >= id));
    return period.id === id ? period : undefined;
  }

  private key(ms: number): string {
    return periodId(this.zone.fieldsAt(ms), this.reset);
  }

  private compute(ms: number): Period {
    const id = this.key(ms);
    const date = periodDate(id, this.reset);
    if (!date) throw new RangeError(`no period of ${this.zone.name} at ${ms}`);
    if (this.reset === 'never') return { id, start: 0, end: NEVER_ENDS, date };
    const start = this.firstWhere(this.utc(date) - SEARCH_MS, ms, (key) => key >= id);
    // The next unit's start by the calendar, as if the zone were UTC: the search's upper guess for the end.
    const end = this.firstWhere(ms, this.utc(date, 1) + SEARCH_MS, (key) => key > id);
    return { id, start, end, date };
  }

  // `date` as if the zone were UTC, `units` of the reset later: where the searches look.
  private utc({ year, month, day, hour }: CalendarFields, units = 0): number {
    const [y, m, d, h] = RESETS.slice(1).map((unit) => (unit === this.reset ? units : 0));
    return Date.UTC(year + y, month - 1 + m, day + d, hour + h);
  }

  // The first instant in (lo, hi] whose key passes `test`, false up to some instant and true after (keys grow with time).
  private firstWhere(lo: number, hi: number, test: (key: string) => boolean): number {
    let a = lo;
    let b = hi;
    while (b - a > 1) {
      const mid = a + Math.floor((b - a) / 2);
      if (test(this.key(mid))) b = mid;
      else a = mid;
    }
    return b;
  }
}
