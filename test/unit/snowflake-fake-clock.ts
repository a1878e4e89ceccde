import type { Clock } from '../../src/clock';

/**
 * A clock the test drives. `now()` is the wall clock (can be set back);
 * `monotonic()` only moves forward. `sleep` advances both at once instead of
 * waiting, and records what was asked. With `tickMs`, every read of either
 * clock advances both a little, so code that busy-waits on the clock ends.
 */
export class FakeClock implements Clock {
  readonly sleeps: number[] = [];
  private mono = 0;

  constructor(public wall: number, public tickMs = 0) {}

  now(): number {
    const v = this.wall;
    this.tick();
    return v;
  }

  monotonic(): number {
    const v = this.mono;
    this.tick();
    return v;
  }

  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.advance(ms);
  }

  /** Time passes: both clocks move forward. */
  advance(ms: number): void {
    this.wall += ms;
    this.mono += ms;
  }

  /** Only the wall clock moves (NTP step, manual change); negative = rollback. */
  jump(ms: number): void {
    this.wall += ms;
  }

  private tick(): void {
    if (this.tickMs) this.advance(this.tickMs);
  }
}

/** Small seeded PRNG (mulberry32) so random tests replay. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
