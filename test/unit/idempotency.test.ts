import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock';
import { InvalidRequestError, UnavailableError } from '../../src/errors';
import { answerOnce, idempotencyKeyOf } from '../../src/http/idempotency';
import { decodeAnswer, encodeAnswer } from '../../src/idempotency/codec';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory-store';
import { RedisIdempotencyStore, answerBytes, redisAnswerLimits } from '../../src/idempotency/redis-store';
import { ANSWER_TTL_MS, CLAIM_TTL_MS, type IdempotencyStore } from '../../src/idempotency/store';
import { registeredName } from '../../src/redis/functions';
import { idempotencyKeys } from '../../src/redis/keys';
import { listedIds } from '../../src/pool/taken-ids';
import { FakeClock } from '../support/clock';
import { batches, idempotencyStoreContract } from '../support/contracts/idempotency-store';

/** The Redis commands the store uses, over a Map, with PX expiry on the fake clock. */
function fakeRedis(clock: Clock) {
  const data = new Map<string, { value: string; expiresAt: number }>();
  const live = (key: string) => {
    const e = data.get(key);
    if (e && e.expiresAt <= clock.now()) data.delete(key);
    return data.get(key);
  };
  return {
    data,
    async get(key: string) {
      return live(key)?.value ?? null;
    },
    async set(key: string, value: string, _px: 'PX', ttl: number, _nx: 'NX') {
      if (live(key)) return null;
      data.set(key, { value, expiresAt: clock.now() + ttl });
      return 'OK' as const;
    },
    async del(key: string) {
      return data.delete(key) ? 1 : 0;
    },
    // The sorted-set commands of the per-entity cap, over a Map of member → score.
    zsets: new Map<string, Map<string, number>>(),
    zset(key: string) {
      let z = this.zsets.get(key);
      if (!z) this.zsets.set(key, (z = new Map()));
      return z;
    },
    async zadd(key: string, score: number, member: string) {
      this.zset(key).set(member, score);
      return 1;
    },
    async zcard(key: string) {
      return this.zset(key).size;
    },
    async zremrangebyscore(key: string, _min: '-inf', max: number) {
      const z = this.zset(key);
      for (const [m, sc] of z) if (sc <= max) z.delete(m);
      return 0;
    },
    async zpopmin(key: string, count: number) {
      const z = this.zset(key);
      const out = [...z].sort((a, b) => a[1] - b[1]).slice(0, count);
      for (const [m] of out) z.delete(m);
      return out.flatMap(([m, sc]) => [m, String(sc)]);
    },
    /** `idpool_store_answer` (store_answer-3.lua) over the same maps, on the fake clock; the real one is tested in test/integration/redis-functions.test.ts. */
    async fcall(
      name: string,
      _keys: number,
      answerKey: string,
      indexKey: string,
      bytesKey: string,
      encoded: string,
      ttl: number,
      requestKey: string,
      cap: number,
      answerPrefix: string,
      bytes: number,
      bytesCap: number,
    ) {
      if (name !== registeredName('idpool_store_answer')) throw new Error(`no function ${name} in the fake`);
      if ((await this.set(answerKey, encoded, 'PX', ttl, 'NX')) !== 'OK') return [0, await this.get(answerKey)];
      const now = clock.now();
      const member = (m: string) => ({
        requestKey: m.slice(0, m.lastIndexOf('\n')),
        bytes: Number(m.slice(m.lastIndexOf('\n') + 1)),
      });
      await this.zadd(indexKey, now, `${requestKey}\n${bytes}`);
      let held = await this.incrby(bytesKey, bytes);
      for (const [m, score] of [...this.zset(indexKey)]) {
        if (score > now - ttl) continue;
        this.zset(indexKey).delete(m);
        held = await this.incrby(bytesKey, -member(m).bytes);
      }
      const freed = new Map<number, number>();
      while (this.zset(indexKey).size > cap || held > bytesCap) {
        const [m, score] = await this.zpopmin(indexKey, 1);
        await this.del(answerPrefix + member(m).requestKey);
        held = await this.incrby(bytesKey, -member(m).bytes);
        const minute = Math.floor(Number(score) / 60_000);
        freed.set(minute, (freed.get(minute) ?? 0) + member(m).bytes);
      }
      return [1, now, ...[...freed].flat()];
    },
    // The per-minute byte counters of the total bound.
    async incrby(key: string, by: number) {
      const value = Number(live(key)?.value ?? 0) + by;
      data.set(key, { value: String(value), expiresAt: live(key)?.expiresAt ?? Number.POSITIVE_INFINITY });
      return value;
    },
    async pexpireat(key: string, at: number) {
      const entry = live(key);
      if (entry) entry.expiresAt = at;
      return entry ? 1 : 0;
    },
    async mget(...keys: string[]) {
      return keys.map((k) => live(k)?.value ?? null);
    },
  };
}

const stores: [string, (clock: FakeClock) => IdempotencyStore][] = [
  ['memory', (clock) => new MemoryIdempotencyStore(clock)],
  ['redis', (clock) => new RedisIdempotencyStore(fakeRedis(clock) as never, clock, 'idpool-t')],
];

// The cases every store keeps run in test/support/contracts/idempotency-store.ts (here on the fakes, and on a real Redis in test/integration/store-contracts.test.ts).
describe.each(stores)('%s idempotency store', (_name, make) => {
  idempotencyStoreContract(async () => make(new FakeClock({ sleep: 'advance' })));

  it('forgets an answer after its TTL', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const store = make(clock);
    const b = batches();
    await store.once('orders', 'k', 1, b.produce(1));
    clock.advance(ANSWER_TTL_MS + 1);
    expect(await store.once('orders', 'k', 1, b.produce(1))).toEqual({ ids: ['101'], replayed: false });
  });
});

describe('redis idempotency store', () => {
  it('answers 503 while another instance still holds the claim, and runs again once the claim expires', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const redis = fakeRedis(clock);
    const store = new RedisIdempotencyStore(redis as never, clock, 'idpool-t');
    const keys = idempotencyKeys('orders', 'k', 'idpool-t');
    await redis.set(keys.claim, 'crashed-instance', 'PX', CLAIM_TTL_MS, 'NX');
    const b = batches();
    await expect(store.once('orders', 'k', 1, b.produce(1))).rejects.toBeInstanceOf(UnavailableError);
    expect(b.calls).toBe(0);
    clock.advance(CLAIM_TTL_MS);
    expect(await store.once('orders', 'k', 1, b.produce(1))).toEqual({ ids: ['100'], replayed: false });
  });

  it('returns the answer stored first when its own claim expired while it ran (its batch is dropped)', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const redis = fakeRedis(clock);
    const store = new RedisIdempotencyStore(redis as never, clock, 'idpool-t');
    const keys = idempotencyKeys('orders', 'k', 'idpool-t');
    const answer = await store.once('orders', 'k', 1, async () => {
      // Meanwhile another instance answered the same key.
      await redis.set(keys.answer, encodeAnswer(1, ['7']), 'PX', ANSWER_TTL_MS, 'NX');
      return ['8'];
    });
    expect(answer).toEqual({ ids: ['7'], replayed: true });
  });

  it('stores and replays business numbers, and a failure after the claim frees the key at once', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const redis = fakeRedis(clock);
    const store = new RedisIdempotencyStore(redis as never, clock, 'idpool-t');
    const numbers = ['INV20261129-001007', 'INV20261129-001008'];
    expect(await store.once('inv', 'k', 2, async () => numbers)).toEqual({ ids: numbers, replayed: false });
    expect(await store.once('inv', 'k', 2, async () => ['other'])).toEqual({ ids: numbers, replayed: true });
    // A take that fails after the claim leaves no claim behind: the retry runs at once.
    await expect(
      store.once('inv', 'k2', 1, async () => {
        throw new Error('refill failed');
      }),
    ).rejects.toThrow('refill failed');
    expect(await store.once('inv', 'k2', 1, async () => ['INV20261129-001009'])).toEqual({
      ids: ['INV20261129-001009'],
      replayed: false,
    });
  });
});

describe('Idempotency-Key header', () => {
  const req = (value?: string) =>
    ({ get: (name: string) => (name === 'idempotency-key' ? value : undefined) }) as never;

  it('accepts 1-128 printable ASCII characters', () => {
    expect(idempotencyKeyOf(req(undefined))).toBeUndefined();
    expect(idempotencyKeyOf(req('a'))).toBe('a');
    expect(idempotencyKeyOf(req('x'.repeat(128)))).toBe('x'.repeat(128));
    expect(idempotencyKeyOf(req('order 17:retry {1}'))).toBe('order 17:retry {1}');
  });

  it.each([['x'.repeat(129)], [''], ['tab\there'], ['é']])('rejects %j with 400', (value) => {
    expect(() => idempotencyKeyOf(req(value))).toThrow(InvalidRequestError);
  });

  it('runs the request plainly without a header', async () => {
    const b = batches();
    const take = (count: number) => async () => listedIds(await b.produce(count)());
    const answer = async (...args: Parameters<typeof answerOnce>) => {
      const { ids, replayed } = await answerOnce(...args);
      return { ids: ids.toArray(), replayed };
    };
    const store = new MemoryIdempotencyStore(new FakeClock({ sleep: 'advance' }));
    expect(await answer(store, req(undefined), 'orders', 1, take(1))).toEqual({ ids: ['100'], replayed: false });
    expect(await answer(store, req(undefined), 'orders', 1, take(1))).toEqual({ ids: ['101'], replayed: false });
    // With a key, the store keeps the ids as strings and replays them.
    expect(await answer(store, req('k'), 'orders', 2, take(2))).toEqual({ ids: ['102', '103'], replayed: false });
    expect(await answer(store, req('k'), 'orders', 2, take(2))).toEqual({ ids: ['102', '103'], replayed: true });
    expect(b.calls).toBe(3);
  });
});

describe('bounds', () => {
  it('encodes answers compactly and decodes them exactly (runs of equal spacing)', () => {
    const monotonic = Array.from({ length: 1000 }, (_, i) => String(1_000_000_000_000n + BigInt(i * 3)));
    const encoded = encodeAnswer(1000, monotonic);
    expect(encoded.length).toBeLessThan(40);
    expect(decodeAnswer(encoded)).toEqual({ count: 1000, ids: monotonic });
    const shuffled = ['905', '17', '18', '19', '400', '3', '9223372036854775806', '9223372036854775807'];
    expect(decodeAnswer(encodeAnswer(8, shuffled))).toEqual({ count: 8, ids: shuffled });
    expect(decodeAnswer(encodeAnswer(1, ['42']))).toEqual({ count: 1, ids: ['42'] });
    const numbers = ['INV20261129-001007', 'A,B+1*2', '[x]', '000123'];
    expect(decodeAnswer(encodeAnswer(4, numbers))).toEqual({ count: 4, ids: numbers });
  });

  it('keeps at most the cap of answers per entity in Redis, dropping the oldest', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const redis = fakeRedis(clock);
    const store = new RedisIdempotencyStore(redis as never, clock, 'idpool-t', {
      ...redisAnswerLimits(64 * 1024 * 1024),
      answersPerEntity: 5,
    });
    const b = batches();
    for (let i = 0; i < 12; i++) {
      await store.once('orders', `k${i}`, 2, b.produce(2));
      clock.advance(1);
    }
    const answers = [...redis.data.keys()].filter((k) => k.includes(':answer:'));
    expect(answers.length).toBe(5);
    expect(answers.every((k) => /:answer:k(7|8|9|10|11)$/.test(k))).toBe(true);
    // The oldest key was forgotten: a retry with it (after its claim lapsed) gets a new batch (wasted ids, never repeated ones).
    clock.advance(CLAIM_TTL_MS);
    expect((await store.once('orders', 'k0', 2, b.produce(2))).replayed).toBe(false);
    expect((await store.once('orders', 'k11', 2, b.produce(2))).replayed).toBe(true);
  });

  it('bounds the in-process store by bytes, evicting least recently used answers', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const store = new MemoryIdempotencyStore(clock, 1024 * 1024);
    const b = batches();
    // Eight entities, so the total bound binds before any entity's quarter.
    for (let i = 0; i < 200; i++) await store.once(`e${i % 8}`, `k${i}`, 1000, b.produce(1000));
    expect(store.sizeBytes).toBeLessThanOrEqual(1024 * 1024);
    expect(store.sizeBytes).toBeGreaterThan(512 * 1024);
    expect((await store.once('e7', 'k199', 1000, b.produce(1000))).replayed).toBe(true);
    expect((await store.once('e0', 'k0', 1000, b.produce(1000))).replayed).toBe(false);
  });

  it('bounds the bytes of answers in Redis per entity (oldest dropped) and in total (new ones not stored, still answered)', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const redis = fakeRedis(clock);
    const answerOf = (entity: string, i: number) => idempotencyKeys(entity, `k${i}`, 'idpool-t').answer;
    // A shuffled batch is one run per id: ~4 KB an answer of 1,000 ids.
    const produce = (n: number) => async () =>
      Array.from({ length: n }, (_, i) => String(((i * 7919) % n) + 1_000_000));
    const one = answerBytes(answerOf('orders', 0), encodeAnswer(1000, await produce(1000)()));
    const limits = { answersPerEntity: 10_000, bytesPerEntity: one * 3, totalBytes: one * 11 };
    const store = new RedisIdempotencyStore(redis as never, clock, 'idpool-t', limits);
    for (let i = 0; i < 10; i++) {
      await store.once('orders', `k${i}`, 1000, produce(1000));
      clock.advance(1);
    }
    const held = (entity: string) =>
      [...redis.data].filter(([k, v]) => k.includes(`{${entity}}:idem:answer:`) && v.expiresAt > clock.now()).length;
    expect(held('orders')).toBe(3);
    expect(Number(redis.data.get(idempotencyKeys('orders', 'x', 'idpool-t').bytes)?.value)).toBeLessThanOrEqual(
      limits.bytesPerEntity,
    );
    expect((await store.once('orders', 'k9', 1000, produce(1000))).replayed).toBe(true);
    clock.advance(CLAIM_TTL_MS);
    expect((await store.once('orders', 'k0', 1000, produce(1000))).replayed).toBe(false);

    // 11 answers stored by orders, 3 held: the 8 its cap dropped left the total (11), so it does not fill it.
    for (const entity of ['users', 'payments'])
      for (let i = 0; i < 3; i++) await store.once(entity, `k${i}`, 1000, produce(1000));
    await store.once('billing', 'k0', 1000, produce(1000));
    await store.once('billing', 'k1', 1000, produce(1000));
    expect(held('billing')).toBe(2);
    // 3 + 3 + 3 + 2 held fill it: the next answer is not stored, but answered.
    const answered = await store.once('billing', 'k2', 1000, produce(1000));
    expect(answered.ids).toHaveLength(1000);
    expect(held('billing')).toBe(2);
    expect((await store.once('billing', 'k2', 1000, produce(1000))).replayed).toBe(false);
    // Once the stored bytes are older than an answer's life, there is room again.
    clock.advance(ANSWER_TTL_MS + 2 * 60_000);
    await store.once('billing', 'k3', 1000, produce(1000));
    expect(held('billing')).toBe(1);
  });

  it("bounds the in-process store per entity to a quarter of its bytes: a busy entity drops its own oldest answers, not others'", async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const store = new MemoryIdempotencyStore(clock, 1024 * 1024);
    const b = batches();
    await store.once('quiet', 'q0', 1000, b.produce(1000));
    for (let i = 0; i < 200; i++) await store.once('busy', `k${i}`, 1000, b.produce(1000));
    expect(store.entityBytes('busy')).toBeLessThanOrEqual(256 * 1024);
    expect(store.entityBytes('busy')).toBeGreaterThan(128 * 1024);
    expect((await store.once('quiet', 'q0', 1000, b.produce(1000))).replayed).toBe(true);
    expect((await store.once('busy', 'k199', 1000, b.produce(1000))).replayed).toBe(true);
    expect((await store.once('busy', 'k0', 1000, b.produce(1000))).replayed).toBe(false);
  });
});
