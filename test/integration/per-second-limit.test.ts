import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadFunctions, registeredName } from '../../src/redis/functions';
import { entityKeys } from '../../src/redis/keys';
import { PerSecondLimiter } from '../../src/pool/rate-limit';
import { REDIS_URL, clearPrefix, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

interface Call {
  key: string;
  count: number;
  limit: number;
}

/**
 * Groups of calls, each group started at the beginning of a Redis second:
 * up to the limit, past it, a request larger than the limit, a limit
 * lowered within the second, two entities.
 */
const GROUPS: Call[][] = [
  [
    { key: 'a', count: 6, limit: 10 },
    { key: 'a', count: 4, limit: 10 },
    { key: 'a', count: 1, limit: 10 },
    { key: 'b', count: 10, limit: 10 },
    { key: 'b', count: 11, limit: 20 },
    { key: 'b', count: 10, limit: 20 },
  ],
  [
    { key: 'a', count: 11, limit: 10 },
    { key: 'a', count: 10, limit: 10 },
    { key: 'b', count: 80, limit: 100 },
    { key: 'b', count: 1, limit: 50 },
    { key: 'b', count: 20, limit: 100 },
    { key: 'b', count: 1, limit: 100 },
  ],
];

/** A TIME reply as [second, ms within it]. */
function secondAndMs(reply: unknown): [number, number] {
  const [s, us] = reply as [string, string];
  return [Number(s), Math.floor(Number(us) / 1000)];
}

describeWithServices('the per-second limit: the Lua function and PerSecondLimiter', { redis: true }, () => {
  let redis: Redis;
  const prefix = testPrefix();

  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    // This branch's library: the shared server may hold another version's.
    await loadFunctions(redis);
  });

  afterAll(async () => {
    await clearPrefix(redis, prefix);
    redis.disconnect();
  });

  /** Waits until the Redis clock has turned to a new second. */
  async function nextRedisSecond(): Promise<void> {
    const [second, ms] = secondAndMs(await redis.time());
    await new Promise((r) => setTimeout(r, 1000 - ms));
    while (secondAndMs(await redis.time())[0] === second) await new Promise((r) => setTimeout(r, 2));
  }

  it('answer every call of one sequence alike, the TypeScript one on the Redis clock of each call', async () => {
    let now = 0;
    const limiter = new PerSecondLimiter({ now: () => now });
    const answers: string[] = [];
    for (const group of GROUPS) {
      await nextRedisSecond();
      for (const { key, count, limit } of group) {
        const ratePrefix = entityKeys(key, prefix).ratePrefix;
        // TIME, the call and TIME again in one MULTI: nothing runs between them, so the
        // call read the Redis clock between the two.
        const replies = await redis
          .multi()
          .time()
          .call('FCALL', registeredName('idpool_rate_limit'), 1, ratePrefix, count, limit)
          .time()
          .exec();
        const [[, before], [, reply], [, after]] = replies!;
        const [code, luaRetryAfterMs] = reply as [number, number?];
        const [s0, ms0] = secondAndMs(before);
        const [s1, ms1] = secondAndMs(after);
        // The second the call counted in, and the bounds of its ms: the
        // second turned between the two TIMEs only if the call straddled it,
        // and then what the call did says which side it was on.
        let second = s0;
        let [lo, hi] = [ms0, ms1];
        if (s1 !== s0) {
          const inLater = code === 0 ? (await redis.exists(`${ratePrefix}${s1}`)) === 1 : (luaRetryAfterMs ?? 0) > 500;
          [second, lo, hi] = inLater ? [s1, 0, ms1] : [s0, ms0, 999];
        }
        now = second * 1000 + lo;
        const ts = limiter.window(key, count, limit);
        if (ts.kind === 'open') ts.count();
        const step = JSON.stringify({ key, count, limit, second, lo, hi, code, luaRetryAfterMs });
        expect(ts.kind, step).toBe(code === 0 ? 'open' : 'rate_limited');
        if (ts.kind === 'rate_limited') {
          expect(code, step).toBe(-3);
          expect(ts.retryAfterMs, step).toBe(1000 - lo);
          expect(luaRetryAfterMs, step).toBeGreaterThanOrEqual(1000 - hi);
          expect(luaRetryAfterMs, step).toBeLessThanOrEqual(1000 - lo);
        }
        answers.push(ts.kind);
      }
    }
    // The sequence reached both answers (each group runs within a few ms of its second's start).
    expect(answers).toContain('open');
    expect(answers).toContain('rate_limited');
  });
});
