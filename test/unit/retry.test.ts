import { describe, expect, it } from 'vitest';
import { retryUntil } from '../../src/retry';
import { FakeClock } from '../support/clock';

class Busy extends Error {}

describe('retryUntil: the one jittered retry until a deadline', () => {
  const setup = () => {
    const fake = new FakeClock();
    const pauses: number[] = [];
    const sleep = async (ms: number) => {
      pauses.push(ms);
      fake.advance(ms);
    };
    return { clock: { monotonic: () => fake.monotonic(), sleep }, pauses };
  };

  it('retries a retryable failure after a pause within [least, least + spread] until it succeeds', async () => {
    const { clock, pauses } = setup();
    let calls = 0;
    const got = await retryUntil(
      async () => {
        if (++calls < 4) throw new Busy('busy');
        return 'done';
      },
      { clock, waitMs: 1000, pauseMs: [10, 40], retryable: (err) => err instanceof Busy },
    );
    expect(got).toBe('done');
    expect(calls).toBe(4);
    expect(pauses).toHaveLength(3);
    for (const ms of pauses) expect(ms >= 10 && ms <= 50).toBe(true);
  });

  it('throws any other failure at once, and the last retryable one once the wait is over', async () => {
    const { clock, pauses } = setup();
    await expect(
      retryUntil(() => Promise.reject(new Error('syntax')), {
        clock,
        waitMs: 1000,
        pauseMs: [10, 40],
        retryable: (err) => err instanceof Busy,
      }),
    ).rejects.toThrow('syntax');
    expect(pauses).toEqual([]);
    let calls = 0;
    await expect(
      retryUntil(() => Promise.reject(new Busy(`busy ${++calls}`)), {
        clock,
        waitMs: 200,
        pauseMs: [50, 0],
        retryable: (err) => err instanceof Busy,
      }),
    ).rejects.toThrow(`busy 6`);
    // Attempts at 0, 50, …, 250 ms: the one after 200 ms is the last.
    expect(pauses).toEqual([50, 50, 50, 50, 50]);
  });
});
