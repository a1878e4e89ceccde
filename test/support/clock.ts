import type { Clock } from '../../src/clock';

/** Where a {@link FakeClock}'s wall clock starts unless told: 2023-11-14T22:13:20Z. */
const FAKE_EPOCH_MS = 1_700_000_000_000;

export interface FakeClockOptions {
  /** Wall-clock ms at the start (default {@link FAKE_EPOCH_MS}). */
  now?: number;
  /**
   * What `sleep(ms)` does. `'wait'` (default): resolves when `advance()` has
   * moved the clock past its time, so the test decides when time passes.
   * `'advance'`: moves the clock on by `ms` itself and lets other queued
   * work run once before resolving, for code that waits on the clock inside
   * one call (a generator waiting for the next millisecond, a take waiting
   * for a refill).
   * A sleep given an AbortSignal (a periodic schedule's, see `every()`)
   * always waits for `advance()`: a background loop never moves time by itself.
   */
  sleep?: 'wait' | 'advance';
  /** Every read of `now()` or `monotonic()` moves time on by this, so code busy-waiting on the clock ends. */
  tickMs?: number;
}

/**
 * The one fake {@link Clock} of the tests: time moves only when the test (or,
 * with `sleep: 'advance'`, a sleep) moves it. `now()` is the wall clock and
 * may be set back with `jump()`; `monotonic()` starts at 0 and only goes forward.
 */
export class FakeClock implements Clock {
  /** Every `sleep(ms)` asked for, in order. */
  readonly sleeps: number[] = [];
  private wallMs: number;
  private mono = 0;
  private sleepers: { at: number; wake: () => void }[] = [];
  private readonly sleepMode: 'wait' | 'advance';
  private readonly tickMs: number;

  constructor(options: FakeClockOptions = {}) {
    this.wallMs = options.now ?? FAKE_EPOCH_MS;
    this.sleepMode = options.sleep ?? 'wait';
    this.tickMs = options.tickMs ?? 0;
  }

  /** The wall clock, read without the `tickMs` a `now()` adds. */
  get wall(): number {
    return this.wallMs;
  }

  now(): number {
    const v = this.wallMs;
    if (this.tickMs) this.advance(this.tickMs);
    return v;
  }

  monotonic(): number {
    const v = this.mono;
    if (this.tickMs) this.advance(this.tickMs);
    return v;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    if (signal?.aborted) return;
    if (this.sleepMode === 'advance' && !signal) {
      // Time moves at once (a caller racing the sleep against other work sees
      // it pass), and other queued work gets its turn before this caller goes on.
      this.advance(ms);
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    await new Promise<void>((wake) => {
      const sleeper = { at: this.mono + ms, wake };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          wake();
        },
        { once: true },
      );
    });
  }

  /** Time passes: both clocks move forward and the sleeps that came due resolve, earliest first. */
  advance(ms: number): void {
    this.wallMs += ms;
    this.mono += ms;
    const due = this.sleepers.filter((s) => s.at <= this.mono).sort((a, b) => a.at - b.at);
    this.sleepers = this.sleepers.filter((s) => s.at > this.mono);
    for (const s of due) s.wake();
  }

  /**
   * Moves time on `ms` in steps of `stepMs`, letting the work each step
   * wakes run before the next: what a timer chain sees over that span.
   */
  async advanceBy(ms: number, stepMs: number): Promise<void> {
    for (let passed = 0; passed < ms; passed += stepMs) {
      this.advance(Math.min(stepMs, ms - passed));
      await settle();
    }
  }

  /** Only the wall clock moves (an NTP step, a manual change); negative sets it back. */
  jump(ms: number): void {
    this.wallMs += ms;
  }

  /** How many sleeps are waiting for time to pass. */
  get waiting(): number {
    return this.sleepers.length;
  }
}

/** Lets queued setImmediate callbacks and promise continuations run (no timer, no wall-clock wait). */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}
