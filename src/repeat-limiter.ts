import type { Clock } from './clock';
import { FixedWindow } from './fixed-window';

/** How a {@link RepeatLimiter} limits; `T` is what it keeps of the latest occurrence held back. */
export interface RepeatLimits<T> {
  /** One key is let through at most once per this many ms. */
  windowMs: number;
  /** Occurrences let through per second over all keys (default: no cap). */
  perSecond?: number;
  /** Keys remembered; when full, the table starts over (bounded memory however many keys come). */
  maxKeys: number;
  /** Where a held-back count no later occurrence carries goes (on `sweep`, `drain`, a full table); else dropped. */
  heldBack?: (latest: T, count: number) => void;
}

interface Entry<T> {
  /** When an occurrence was last let through (monotonic ms). */
  admittedAt: number;
  /** Occurrences held back since. */
  held: number;
  latest: T;
}

/**
 * Lets each key's first occurrence through, then one per `windowMs`, which carries the count held back since. The
 * one repeat limiter of the log and the alarms: in an outage everything fails alike, and a line each would flood.
 */
export class RepeatLimiter<T = void> {
  private readonly entries = new Map<string, Entry<T>>();
  /** Occurrences let through this second (the `perSecond` cap). */
  private readonly second = new FixedWindow(1000);

  constructor(
    private readonly clock: Pick<Clock, 'monotonic'>,
    private readonly limits: RepeatLimits<T>,
  ) {}

  /** An occurrence of `key`: let through with the count held back since (a number), or held back (undefined). */
  admit(key: string, latest: T): number | undefined {
    const now = this.clock.monotonic();
    let entry = this.entries.get(key);
    if (!entry) {
      if (this.entries.size >= this.limits.maxKeys) this.drain();
      this.entries.set(key, (entry = { admittedAt: Number.NEGATIVE_INFINITY, held: 0, latest }));
    }
    if (now - entry.admittedAt < this.limits.windowMs || !this.withinSecond(now)) {
      entry.held++;
      entry.latest = latest;
      return undefined;
    }
    const held = entry.held;
    entry.admittedAt = now;
    entry.held = 0;
    return held;
  }

  /** Hands each count held back for a whole window to `heldBack` and forgets keys silent for one. Run once per window. */
  sweep(): void {
    const now = this.clock.monotonic();
    for (const [key, entry] of this.entries) {
      if (now - entry.admittedAt < this.limits.windowMs) continue;
      if (entry.held === 0) {
        this.entries.delete(key);
        continue;
      }
      this.limits.heldBack?.(entry.latest, entry.held);
      entry.held = 0;
      entry.admittedAt = now;
    }
  }

  /** Hands every held-back count to `heldBack` now and forgets every key (shutdown, a full table). */
  drain(): void {
    for (const entry of this.entries.values()) if (entry.held > 0) this.limits.heldBack?.(entry.latest, entry.held);
    this.entries.clear();
  }

  /** Forgets a key (a retired entity). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Counts one more let through this second, unless `perSecond` already were. */
  private withinSecond(now: number): boolean {
    const cap = this.limits.perSecond;
    if (cap === undefined) return true;
    const second = this.second.at(now);
    if (second.count >= cap) return false;
    second.count++;
    return true;
  }
}

/**
 * A loop's failures over many entities: each at most once a minute, so one failing every tick never hides another's
 * first; ten lines a second in all, so an outage writes a few; 10,000 keys bound the memory at 100,000 entities.
 */
export const LOOP_FAILURE_LIMITS = { windowMs: 60_000, perSecond: 10, maxKeys: 10_000 } as const;

/** A log line's fields, with `repeated: N` when N lines like it were held back since the last one written. */
export function withRepeated(line: object, repeated: number): object {
  return repeated > 0 ? { ...line, repeated } : line;
}
