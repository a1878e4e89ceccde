import Redis from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { systemClock } from '../../src/clock';
import { ConflictError, RateLimitedError, UnavailableError } from '../../src/errors';
import { decodeAnswer, encodeAnswer } from '../../src/idempotency/codec';
import { RedisIdempotencyStore, redisAnswerLimits } from '../../src/idempotency/redis-store';
import { ANSWER_TTL_MS } from '../../src/idempotency/store';
import { entityKeys, idempotencyKeys } from '../../src/redis/keys';
import { RedisEntityRateLimit } from '../../src/pool/rate-limit';
import { callFunction, loadFunctions } from '../../src/redis/functions';
import { REDIS_URL, clearPrefix, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

/**
 * The atomic Redis operations outside the pools, as Lua functions on a real
 * Redis: the snowflake per-second limit (`rate_limit-1.lua`, Redis clock) and
 * storing an idempotent answer with its index and trim (`store_answer-3.lua`).
 */
describeWithServices('Redis functions: rate limit and idempotent answers', { redis: true }, () => {
  const open: Redis[] = [];
  const prefixes: string[] = [];

  afterEach(async () => {
    for (const redis of open.splice(0)) {
      for (const prefix of prefixes) await clearPrefix(redis, prefix);
      redis.disconnect();
    }
    prefixes.splice(0);
  });

  async function connect(): Promise<Redis> {
    const redis = new Redis(REDIS_URL);
    open.push(redis);
    // This branch's library: the shared server may hold another version's.
    await loadFunctions(redis);
    return redis;
  }

  function prefix(): string {
    const p = testPrefix();
    prefixes.push(p);
    return p;
  }

  /** The Redis server's clock: [seconds, microseconds]. */
  async function redisTime(redis: Redis): Promise<[number, number]> {
    const [s, us] = (await redis.time()) as unknown as [string, string];
    return [Number(s), Number(us)];
  }

  /** Waits for the start of the next Redis second when less than `needMs` of this one is left, so a test's calls share one second. */
  async function withinOneSecond(redis: Redis, needMs: number): Promise<number> {
    const [, us] = await redisTime(redis);
    if (1000 - us / 1000 < needMs) await new Promise((r) => setTimeout(r, 1000 - us / 1000 + 5));
    return (await redisTime(redis))[0];
  }

  it('admits ids up to the limit in one Redis second, refuses beyond it without counting, on the key of the Redis second', async () => {
    const redis = await connect();
    const p = prefix();
    const limit = new RedisEntityRateLimit(redis, p);
    const second = await withinOneSecond(redis, 500);
    await limit.admit('sf', 6, 10);
    await limit.admit('sf', 4, 10);
    const refused = await limit.admit('sf', 1, 10).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(1);
    expect((refused as RateLimitedError).message).toBe('entity sf is limited to 10 ids per second');
    const key = `${entityKeys('sf', p).ratePrefix}${second}`;
    expect(await redis.get(key)).toBe('10');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(2000);
    // Unlimited entities touch nothing.
    await limit.admit('free', 1_000_000, 0);
    expect(await redis.exists(`${entityKeys('free', p).ratePrefix}${second}`)).toBe(0);
  });

  it('shares one budget between instances: of 60 concurrent single ids against a limit of 25, exactly 25 pass', async () => {
    const [a, b] = [await connect(), await connect()];
    const p = prefix();
    const limits = [new RedisEntityRateLimit(a, p), new RedisEntityRateLimit(b, p)];
    await withinOneSecond(a, 700);
    const outcomes = await Promise.allSettled(Array.from({ length: 60 }, (_, i) => limits[i % 2].admit('sf', 1, 25)));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(25);
    expect(outcomes.filter((o) => o.status === 'rejected').every((o) => o.reason instanceof RateLimitedError)).toBe(
      true,
    );
  });

  it('idpool_store_answer keeps the first answer and hands it back to a later writer', async () => {
    const redis = await connect();
    const keys = idempotencyKeys('orders', 'k', prefix());
    const store = (encoded: string) =>
      callFunction<[number, string?]>(
        redis,
        'idpool_store_answer',
        [keys.answer, keys.index, keys.bytes],
        [encoded, ANSWER_TTL_MS, 'k', 100, keys.answerPrefix, 120, 1_000_000],
      );
    const [stored, now] = await store(encodeAnswer(2, ['10', '11']));
    expect(stored).toBe(1);
    expect(Math.abs(Number(now) - Date.now())).toBeLessThan(5000);
    const [code, winner] = await store(encodeAnswer(2, ['20', '21']));
    expect(code).toBe(0);
    expect(decodeAnswer(winner!)).toEqual({ count: 2, ids: ['10', '11'] });
    const ttl = await redis.pttl(keys.answer);
    expect(ttl).toBeGreaterThan(ANSWER_TTL_MS - 5000);
    expect(await redis.zrange(keys.index, 0, -1)).toEqual(['k\n120']);
    expect(await redis.get(keys.bytes)).toBe('120');

    // Beyond the cap (one answer here) the oldest is dropped, and its bytes come back by the minute it was stored in.
    const [, storedAt, ...freed] = await callFunction<number[]>(
      redis,
      'idpool_store_answer',
      [keys.answerPrefix + 'k2', keys.index, keys.bytes],
      [encodeAnswer(1, ['12']), ANSWER_TTL_MS, 'k2', 1, keys.answerPrefix, 90, 1_000_000],
    );
    expect(freed).toEqual([Math.floor(Number(now) / 60_000), 120]);
    expect(storedAt).toBeGreaterThanOrEqual(Number(now));
    expect(await redis.exists(keys.answer)).toBe(0);
    expect(await redis.get(keys.bytes)).toBe('90');
  });

  it('replays an answer, refuses another count, keeps entities apart', async () => {
    const redis = await connect();
    const store = new RedisIdempotencyStore(redis, systemClock, prefix());
    let next = 100;
    const produce = (n: number) => async () => Array.from({ length: n }, () => String(next++));
    expect(await store.once('orders', 'k', 3, produce(3))).toEqual({ ids: ['100', '101', '102'], replayed: false });
    expect(await store.once('orders', 'k', 3, produce(3))).toEqual({ ids: ['100', '101', '102'], replayed: true });
    await expect(store.once('orders', 'k', 4, produce(4))).rejects.toBeInstanceOf(ConflictError);
    expect(await store.once('users', 'k', 1, produce(1))).toEqual({ ids: ['103'], replayed: false });
  });

  it('answers 503 while another instance holds the claim; returns the answer stored first when its own claim lapsed', async () => {
    const redis = await connect();
    const p = prefix();
    const store = new RedisIdempotencyStore(redis, systemClock, p);
    const keys = idempotencyKeys('orders', 'held', p);
    await redis.set(keys.claim, 'another-instance', 'PX', 60_000);
    let ran = 0;
    await expect(store.once('orders', 'held', 1, async () => [String(++ran)])).rejects.toBeInstanceOf(UnavailableError);
    expect(ran).toBe(0);

    const raced = idempotencyKeys('orders', 'raced', p);
    const answer = await store.once('orders', 'raced', 1, async () => {
      // Meanwhile another instance answered the same key.
      await redis.set(raced.answer, encodeAnswer(1, ['7']), 'PX', ANSWER_TTL_MS, 'NX');
      return ['8'];
    });
    expect(answer).toEqual({ ids: ['7'], replayed: true });
  });

  it('keeps at most the cap of answers per entity, the newest, with the index matching the answers, also under concurrent stores', async () => {
    const redis = await connect();
    const p = prefix();
    const store = new RedisIdempotencyStore(redis, systemClock, p, {
      ...redisAnswerLimits(64 * 1024 * 1024),
      answersPerEntity: 5,
    });
    let next = 0;
    const produce = async () => [String(next++)];
    for (let i = 0; i < 12; i++) {
      await store.once('orders', `k${i}`, 1, produce);
      // Distinct Redis milliseconds, so "oldest" is well defined.
      await new Promise((r) => setTimeout(r, 3));
    }
    const keys = idempotencyKeys('orders', 'k0', p);
    const answers = async () =>
      (await redis.keys(`${keys.answerPrefix}*`)).map((k) => k.slice(keys.answerPrefix.length)).sort();
    expect(await answers()).toEqual(['k10', 'k11', 'k7', 'k8', 'k9']);
    const requestKeys = (members: string[]) => members.map((m) => m.slice(0, m.lastIndexOf('\n')));
    expect(requestKeys(await redis.zrange(keys.index, 0, -1)).sort()).toEqual(await answers());
    expect((await store.once('orders', 'k11', 1, produce)).replayed).toBe(true);

    const many = new RedisIdempotencyStore(redis, systemClock, p, {
      ...redisAnswerLimits(64 * 1024 * 1024),
      answersPerEntity: 10,
    });
    await Promise.all(Array.from({ length: 40 }, (_, i) => many.once('busy', `c${i}`, 1, produce)));
    const busy = idempotencyKeys('busy', 'c0', p);
    const stored = await redis.keys(`${busy.answerPrefix}*`);
    expect(stored).toHaveLength(10);
    expect(
      requestKeys(await redis.zrange(busy.index, 0, -1))
        .map((k) => `${busy.answerPrefix}${k}`)
        .sort(),
    ).toEqual(stored.sort());
  });
});
