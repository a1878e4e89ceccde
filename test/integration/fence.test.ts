import Redis from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { RedisPoolStore } from '../../src/pool/redis-pool-store';
import { OWN_LIBRARY, PUBLIC_LIBRARY, loadFunctions, registeredName } from '../../src/redis/functions';
import { IdStride } from '../../src/segment/stride';
import type { Segment } from '../../src/segment/allocator';
import { type Service, createService } from '../../src/service';
import { serviceParts, withSeams } from '../../src/service/internals';
import { REDIS_URL, clearPrefix, createTestSchema, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/redis/keys';
import { plainTake } from '../support/taken';
import { inProcessConfig } from '../support/in-process';

describeWithServices('fence: a stale refiller cannot push an older segment', { mysql: true, redis: true }, () => {
  /** Runs `body` with a store on a fresh key prefix of the shared server, loaded with this branch's library (the server may hold another version's). */
  const withStore = async (body: (store: RedisPoolStore, redis: Redis, prefix: string) => Promise<void>) => {
    const redis = new Redis(REDIS_URL);
    const prefix = testPrefix();
    try {
      await loadFunctions(redis);
      await body(new RedisPoolStore(redis, prefix), redis, prefix);
    } finally {
      await clearPrefix(redis, prefix);
      redis.disconnect();
    }
  };

  /** The keys of one entity that exist, beyond the ones every pool has. */
  const leftovers = async (redis: Redis, prefix: string, entity: string) => {
    const k = entityKeys(entity, prefix);
    return (
      await Promise.all([k.pushing, k.pushOpen].map(async (key) => ((await redis.exists(key)) ? key : undefined)))
    ).filter(Boolean);
  };

  it('a push is refused unless its segment starts above the fence, decimal beyond 2^53 too', async () => {
    await withStore(async (store, redis, prefix) => {
      expect(await store.reset('e', -1n)).toBe(true);
      expect(await store.push('e', ['10', '11', '12'], 10n, 12n)).toEqual({ kind: 'ok', size: 3 });
      expect(await store.push('e', ['12', '13'], 12n, 13n)).toEqual({ kind: 'fenced' });
      expect(await store.push('e', ['5', '6'], 5n, 6n)).toEqual({ kind: 'fenced' });
      // Decimal comparison beyond 2^53 and across lengths.
      expect(await store.push('e', ['9007199254740993'], 9007199254740993n, 9007199254740993n)).toEqual({
        kind: 'ok',
        size: 4,
      });
      expect(await store.push('e', ['9007199254740992'], 9007199254740992n, 9007199254740992n)).toEqual({
        kind: 'fenced',
      });
      expect(await redis.lrange(entityKeys('e', prefix).ids, 0, -1)).toEqual(['10', '11', '12', '9007199254740993']);
      expect(await redis.get(entityKeys('e', prefix).pushed)).toBe('4');
      expect(await leftovers(redis, prefix, 'e')).toEqual([]);
    });
  });

  it('a refused push leaves the pool exactly as it was, empty or not, and nothing behind; an epoch change refuses too', async () => {
    await withStore(async (store, redis, prefix) => {
      const k = entityKeys('r', prefix);
      await store.reset('r', -1n);
      const stride = new IdStride(3, 2);
      const first = stride.idStrings(10n, 10_010n);
      expect(await store.push('r', first, stride.toId(10n), stride.toId(10_009n))).toEqual({
        kind: 'ok',
        size: 10_000,
      });
      expect(await redis.lrange(k.ids, 0, -1)).toEqual(first);
      // Fenced onto a full pool, then onto an empty one (the list key is gone).
      expect(await store.push('r', stride.idStrings(5_000n, 6_000n), stride.toId(5_000n), stride.toId(5_999n))).toEqual(
        { kind: 'fenced' },
      );
      expect(await redis.lrange(k.ids, 0, -1)).toEqual(first);
      expect((await store.take('r', 10_000, 0)).kind).toBe('ok');
      expect(await redis.exists(k.ids)).toBe(0);
      expect(await store.push('r', ['30029'], 30029n, 30029n)).toEqual({ kind: 'fenced' });
      expect(await redis.exists(k.ids)).toBe(0);
      expect(await redis.get(k.pushed)).toBe('10000');
      expect(await leftovers(redis, prefix, 'r')).toEqual([]);
      // A pool filled on another server: refused, untouched, for the refiller to reset.
      expect(await store.push('r', ['30032', '30035'], 30032n, 30035n)).toEqual({ kind: 'ok', size: 2 });
      await redis.set(k.epoch, 'another-server');
      expect(await store.push('r', ['30038'], 30038n, 30038n)).toEqual({ kind: 'epoch_changed' });
      expect(await redis.lrange(k.ids, 0, -1)).toEqual(['30032', '30035']);
      expect(await redis.get(k.fence)).toBe('30035');
      expect(await leftovers(redis, prefix, 'r')).toEqual([]);
    });
  });

  it('ids a push sent while the library was gone never reach the pool; the push is made once, after the library is back', async () => {
    await withStore(async (store, redis, prefix) => {
      const k = entityKeys('g', prefix);
      await store.reset('g', -1n);
      expect(await store.push('g', ['1', '2'], 1n, 2n)).toEqual({ kind: 'ok', size: 2 });
      // The push's own MULTI run without the library, as a server that lost it would run it.
      await redis.call('FUNCTION', 'DELETE', OWN_LIBRARY);
      const bare = await redis
        .multi()
        .fcall(
          registeredName('idpool_push_open'),
          6,
          k.ids,
          k.fence,
          k.epoch,
          k.pushed,
          k.pushing,
          k.pushOpen,
          '1',
          '2',
          2,
        )
        .rpush(k.pushing, '1', '2')
        .fcall(registeredName('idpool_push_close'), 3, k.ids, k.pushing, k.pushOpen)
        .exec();
      expect(String(bare![0][0])).toMatch(/Function not found/);
      expect(await redis.lrange(k.ids, 0, -1)).toEqual(['1', '2']);
      // The store's push meets the missing library the same way, loads it and pushes once.
      expect(await store.push('g', ['3', '4'], 3n, 4n)).toEqual({ kind: 'ok', size: 4 });
      expect(await redis.lrange(k.ids, 0, -1)).toEqual(['1', '2', '3', '4']);
      expect(await redis.get(k.pushed)).toBe('4');
      expect(await leftovers(redis, prefix, 'g')).toEqual([]);
    });
  });

  it('consumers popping while pushes run see every id once, in order, and never a pool the push moved aside', async () => {
    await withStore(async (store, redis, prefix) => {
      const consumer = new Redis(REDIS_URL);
      const k = entityKeys('c', prefix);
      try {
        await store.reset('c', -1n);
        const stride = new IdStride(1, 0);
        // A first segment the pushes keep ahead of: the pool never runs dry on its own.
        await store.push('c', stride.idStrings(1n, 20_001n), 1n, 20_000n);
        let pushing = true;
        let pushed = 20_000;
        const popped: string[] = [];
        let shortAnswers = 0;
        const pops = (async () => {
          while (pushing) {
            // Pops only what is surely pooled: a short answer would be a pool the MULTI left visible while moved.
            if (pushed - popped.length < 200) {
              await new Promise((r) => setImmediate(r));
              continue;
            }
            const got = (await consumer.lpop(k.ids, 200)) ?? [];
            if (got.length < 200) shortAnswers++;
            popped.push(...got);
          }
        })();
        for (let n = 20_001n; n < 220_001n; n += 5_000n) {
          expect((await store.push('c', stride.idStrings(n, n + 5_000n), n, n + 4_999n)).kind).toBe('ok');
          pushed += 5_000;
        }
        pushing = false;
        await pops;
        // The consumer popped while the pushes ran, not only after.
        expect(popped.length).toBeGreaterThan(2_000);
        const all = popped.concat(await redis.lrange(k.ids, 0, -1));
        expect(all).toHaveLength(220_000);
        expect(all.every((id, i) => id === String(i + 1))).toBe(true);
        expect(shortAnswers).toBe(0);
      } finally {
        consumer.disconnect();
      }
    });
  });

  it('restores its Redis functions when they are gone (FUNCTION FLUSH) and keeps the server check', async () => {
    await withStore(async (store, redis, prefix) => {
      await store.reset('f', -1n);
      await store.push('f', ['1', '2', '3'], 1n, 3n);
      await redis.call('FUNCTION', 'DELETE', OWN_LIBRARY);
      await redis.call('FUNCTION', 'DELETE', PUBLIC_LIBRARY);
      expect(plainTake(await store.take('f', 2, 0))).toEqual({ kind: 'ok', ids: ['1', '2'], remaining: 1 });
      // A marker from another server is refused by the reloaded library too.
      await redis.set(`${prefix}:{f}:server`, 'another-server');
      expect(plainTake(await store.take('f', 1, 0))).toEqual({ kind: 'epoch_changed' });
      await expect(
        redis.call('FCALL', 'idpool_pop', 2, `${prefix}:{f}:ids`, `${prefix}:{f}:server`, 1),
      ).rejects.toThrow(/IDPOOL_SERVER_CHANGED/);
    });
  });

  const schemas: Awaited<ReturnType<typeof createTestSchema>>[] = [];
  const services: Service[] = [];
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await Promise.all(schemas.map((s) => s.drop()));
  });

  /**
   * Two services on a fresh prefix and schema sharing entity `orders` (pool 1,000, step
   * 100) with leases of 1 s; `slow`'s first refill, started here, stalls
   * `stallMs` after reserving (resolves once it stalls).
   */
  const stalledRefill = async (stallMs: number) => {
    const schema = await createTestSchema();
    schemas.push(schema);
    const prefix = testPrefix();
    const config = inProcessConfig({
      IDPOOL_DATABASE_URL: schema.url,
      IDPOOL_REDIS_URL: REDIS_URL,
      IDPOOL_REFILL_LOCK_TTL_MS: '1000',
    });
    let segment: Segment | undefined;
    let stalled: () => void = () => undefined;
    const stalling = new Promise<void>((resolve) => (stalled = resolve));
    const slow = await createService(
      config,
      withSeams(
        { redisPrefix: prefix },
        {
          beforePush: async (_key, reserved) => {
            if (segment) return;
            segment = reserved;
            stalled();
            await new Promise((r) => setTimeout(r, stallMs));
          },
        },
      ),
    );
    services.push(slow);
    const other = await createService(config, { redisPrefix: prefix });
    services.push(other);
    await serviceParts(slow).registry.register({
      key: 'orders',
      mode: 'monotonic',
      step: 100,
      maxPoolSize: 1000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 1000,
    });
    await serviceParts(other).registry.refresh();
    serviceParts(other).refiller.markReset('orders');
    serviceParts(slow).refiller.markReset('orders');
    const refill = serviceParts(slow).refiller.refill('orders');
    await stalling;
    return { slow, other, prefix, refill, segment: segment! };
  };

  it('a refill longer than many leases keeps its lock to the end: nobody else reserves, and its segment is not refused', async () => {
    const { slow, other, prefix, refill, segment } = await stalledRefill(3500);
    const lock = entityKeys('orders', prefix).lock;
    // Past three leases the lock is still the slow refiller's, and the other skips.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      expect(await serviceParts(other).redis!.get(lock)).toMatch(
        new RegExp(`:${process.pid}:[0-9a-f]+@[0-9a-f]+:[0-9a-f]+$`),
      );
      await serviceParts(other).refiller.refill('orders');
      expect(serviceParts(other).refiller.stats.segmentsReserved).toBe(0);
    }
    await refill;
    expect(serviceParts(slow).refiller.stats.fenceRefusals).toBe(0);
    expect(await serviceParts(other).redis!.exists(lock)).toBe(0);
    const pooled = (await serviceParts(other).redis!.lrange(entityKeys('orders', prefix).ids, 0, -1)).map(BigInt);
    expect(pooled).toHaveLength(1000);
    expect(pooled[0]).toBe(segment.start);
  });

  it('a refiller that lost its lock while it stalled has its older segment refused; the list stays strictly increasing', async () => {
    const {
      slow: stale,
      other: fresh,
      prefix,
      refill: staleRefill,
      segment: stalledSegment,
    } = await stalledRefill(1200);
    // A's lease lapses as a stalled process's would (a GC pause, a SIGSTOP
    // extend nothing; a real one: refill-lock.test.ts, the dropped connection).
    await serviceParts(fresh).redis!.del(entityKeys('orders', prefix).lock);
    await serviceParts(fresh).refiller.refill('orders');
    expect(await serviceParts(fresh).poolStore.size('orders')).toBe(1000);
    await staleRefill;

    expect(serviceParts(stale).refiller.stats.fenceRefusals).toBe(1);
    const ids = (await serviceParts(fresh).redis!.lrange(`${prefix}:{orders}:ids`, 0, -1)).map(BigInt);
    expect(ids).toHaveLength(1000);
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
    // The stale segment was dropped, not pushed: none of its ids is pooled.
    expect(ids.every((id) => id >= stalledSegment.end)).toBe(true);
    const taken = await serviceParts(fresh).takes.take(serviceParts(fresh).registry.get('orders')!, 1000);
    expect(taken.toArray().map(BigInt)).toEqual(ids);
  });
});
