import { describe, expect, it } from 'vitest';
import { RateLimitedError } from '../../src/errors';
import { MemoryEntityRateLimit, PerSecondLimiter } from '../../src/pool/rate-limit';
import { FakeClock } from '../support/clock';

/** One call: at `at` ms into the test (second 0 starts at a whole second), `count` ids of `key` against `limit`. */
interface Step {
  at: number;
  key?: string;
  count: number;
  limit: number;
  /** Take only: the pool is short, so the window is checked and nothing counted (refuseTake's `{-1, size}`). */
  short?: true;
  /** 'ok', or the refusal's retryAfterMs. */
  answer: 'ok' | number;
}

/**
 * The rules of `_prelude.lua`'s `rateWindow`/`countRate` (and so of
 * `idpool_take` and `idpool_rate_limit`), one row each.
 */
const RULES: { rule: string; steps: Step[] }[] = [
  {
    rule: 'ids fit while the second’s count plus the request stays within the limit, the limit itself included',
    steps: [
      { at: 0, count: 6, limit: 10, answer: 'ok' },
      { at: 10, count: 4, limit: 10, answer: 'ok' },
      { at: 20, count: 1, limit: 10, answer: 980 },
    ],
  },
  {
    rule: 'a refusal counts nothing: a smaller request still fits',
    steps: [
      { at: 0, count: 8, limit: 10, answer: 'ok' },
      { at: 1, count: 3, limit: 10, answer: 999 },
      { at: 2, count: 3, limit: 10, answer: 998 },
      { at: 3, count: 2, limit: 10, answer: 'ok' },
    ],
  },
  {
    rule: 'a request larger than the limit never fits, even in a fresh second',
    steps: [
      { at: 500, count: 11, limit: 10, answer: 500 },
      { at: 1500, count: 11, limit: 10, answer: 500 },
      { at: 1501, count: 10, limit: 10, answer: 'ok' },
    ],
  },
  {
    rule: 'each second starts from 0, at the whole second (the counter is keyed by the second)',
    steps: [
      { at: 0, count: 10, limit: 10, answer: 'ok' },
      { at: 999, count: 1, limit: 10, answer: 1 },
      { at: 1000, count: 10, limit: 10, answer: 'ok' },
      { at: 1001, count: 1, limit: 10, answer: 999 },
      { at: 5000, count: 1, limit: 10, answer: 'ok' },
    ],
  },
  {
    rule: 'retryAfterMs is the ms left in the second: 1000 at its start, 1 at its last ms',
    steps: [
      { at: 0, count: 2, limit: 1, answer: 1000 },
      { at: 999, count: 2, limit: 1, answer: 1 },
      { at: 1250, count: 2, limit: 1, answer: 750 },
    ],
  },
  {
    rule: 'the count is of ids, whatever the limit each call carries (a limit lowered within the second)',
    steps: [
      { at: 0, count: 80, limit: 100, answer: 'ok' },
      { at: 1, count: 1, limit: 50, answer: 999 },
      { at: 2, count: 20, limit: 100, answer: 'ok' },
    ],
  },
  {
    rule: 'a limit of 0 is none (idpool_take’s ARGV[2]): anything fits and nothing is counted',
    steps: [
      { at: 0, count: 1_000_000, limit: 0, answer: 'ok' },
      { at: 1, count: 10, limit: 10, answer: 'ok' },
    ],
  },
  {
    rule: 'a take the pool cannot fill is checked against the window but not counted',
    steps: [
      { at: 0, count: 10, limit: 10, short: true, answer: 'ok' },
      { at: 1, count: 10, limit: 10, answer: 'ok' },
      { at: 2, count: 1, limit: 10, short: true, answer: 998 },
    ],
  },
  {
    rule: 'entities count apart (a counter per entity)',
    steps: [
      { at: 0, key: 'a', count: 10, limit: 10, answer: 'ok' },
      { at: 1, key: 'b', count: 10, limit: 10, answer: 'ok' },
      { at: 2, key: 'a', count: 1, limit: 10, answer: 998 },
    ],
  },
];

describe('PerSecondLimiter: the Lua per-second window, rule by rule', () => {
  it.each(RULES)('$rule', ({ steps }) => {
    // A whole second plus 0: `at` is the ms within the test's seconds.
    const clock = new FakeClock({ now: 1_700_000_000_000 });
    const limiter = new PerSecondLimiter(clock);
    let at = 0;
    for (const step of steps) {
      clock.advance(step.at - at);
      at = step.at;
      const window = limiter.window(step.key ?? 'e', step.count, step.limit);
      if (window.kind === 'open' && !step.short) window.count();
      expect(window.kind === 'open' ? 'ok' : window.retryAfterMs, JSON.stringify(step)).toBe(step.answer);
    }
  });
});

describe('MemoryEntityRateLimit', () => {
  it('admits and counts in one step; over the limit it answers the one 429 with Retry-After in whole seconds', async () => {
    const clock = new FakeClock({ now: 1_700_000_000_400 });
    const limit = new MemoryEntityRateLimit(clock);
    await limit.admit('sf', 6, 10);
    await limit.admit('sf', 4, 10);
    const refused = await limit.admit('sf', 1, 10).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).message).toBe('entity sf is limited to 10 ids per second');
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(1);
    clock.advance(600);
    await limit.admit('sf', 10, 10);
    await limit.admit('free', 1_000_000, 0);
  });
});
