import Redis from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { RedisPoolStore, loadFunctions } from '../../src/pool/redis-pool-store';
import { IdStride } from '../../src/segment/stride';
import type { Segment } from '../../src/segment/allocator';
import { type Service, createService } from '../../src/service';
import { REDIS_URL, clearPrefix, createTestSchema, testPrefix } from '../helpers/services';
import { describeWithServices } from '../support/services';
import { entityKeys } from '../../src/pool/keys';

describeWithServices('fence: a stale refiller cannot push an older segment', { mysql: true, redis: true }, () => {
  it('idpool_push refuses a segment that does not start above the fence', async () => {
    const redis = new Redis(REDIS_URL);
    const prefix = testPrefix();
    try {
      // This branch's library: the shared server may hold another version's.
      await loadFunctions(redis);
      const store = new RedisPoolStore(redis, prefix);
      expect(await store.reset('e', -1n)).toBe(true);
      expect(await store.push('e', ['10', '11', '12'], 10n, 12n)).toEqual({ kind: 'ok', size: 3 });
      expect(await store.push('e', ['12', '13'], 12n, 13n)).toEqual({ kind: 'fenced' });
      expect(await store.push('e', ['5', '6'], 5n, 6n)).toEqual({ kind: 'fenced' });
      // Decimal comparison beyond 2^53 and across lengths.
      expect(await store.push('e', ['9007199254740993'], 9007199254740993n, 9007199254740993n)).toEqual({ kind: 'ok', size: 4 });
      expect(await store.push('e', ['9007199254740992'], 9007199254740992n, 9007199254740992n)).toEqual({ kind: 'fenced' });
      expect(await redis.lrange(entityKeys('e', prefix).ids, 0, -1)).toEqual(['10', '11', '12', '9007199254740993']);
    } finally {
      await clearPrefix(redis, prefix);
      redis.disconnect();
    }
  });

  it('idpool_push_range writes the ids itself, exact up to 2^53, and honours the fence and stride mapping', async () => {
    const redis = new Redis(REDIS_URL);
    const prefix = testPrefix();
    try {
      // This branch's library: the shared server may hold another version's.
      await loadFunctions(redis);
      const store = new RedisPoolStore(redis, prefix);
      const stride = new IdStride(3, 2);
      await store.reset('r', -1n);
      expect(await store.pushRange('r', 10n, 2510n, stride)).toEqual({ kind: 'ok', size: 2500 });
      expect(await redis.lrange(entityKeys('r', prefix).ids, 0, -1)).toEqual(stride.idStrings(10n, 2510n));
      expect(await store.pushRange('r', 2000n, 3000n, stride)).toEqual({ kind: 'fenced' });
      const top = 3_002_399_751_580_329n; // its id 3 * top + 2 = 2^53 - 2, the last exact one below
      expect(await store.pushRange('r', top - 2n, top + 1n, stride)).toEqual({ kind: 'ok', size: 2503 });
      expect(await redis.lrange(entityKeys('r', prefix).ids, -3, -1)).toEqual(['9007199254740983', '9007199254740986', '9007199254740989']);
      await expect(store.pushRange('r', top + 1n, top + 2n, stride)).rejects.toThrow(/below 2\^53/);
    } finally {
      await clearPrefix(redis, prefix);
      redis.disconnect();
    }
  });

  it('restores its Redis functions when they are gone (FUNCTION FLUSH) and keeps the server check', async () => {
    const redis = new Redis(REDIS_URL);
    const prefix = testPrefix();
    try {
      // This branch's library: the shared server may hold another version's.
      await loadFunctions(redis);
      const store = new RedisPoolStore(redis, prefix);
      await store.reset('f', -1n);
      await store.push('f', ['1', '2', '3'], 1n, 3n);
      await redis.call('FUNCTION', 'DELETE', 'idpool');
      expect(await store.take('f', 2, 0)).toEqual({ kind: 'ok', ids: ['1', '2'], remaining: 1 });
      // A marker from another server is refused by the reloaded library too.
      await redis.set(`${prefix}:{f}:server`, 'another-server');
      expect(await store.take('f', 1, 0)).toEqual({ kind: 'epoch_changed' });
      await expect(redis.call('FCALL', 'idpool_pop', 2, `${prefix}:{f}:ids`, `${prefix}:{f}:server`, 1)).rejects.toThrow(/IDPOOL_SERVER_CHANGED/);
    } finally {
      await clearPrefix(redis, prefix);
      redis.disconnect();
    }
  });

  let schema: Awaited<ReturnType<typeof createTestSchema>>;
  const services: Service[] = [];
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await schema?.drop();
  });

  it('a refiller paused past its lock TTL has its older segment refused; the list stays strictly increasing', async () => {
    schema = await createTestSchema();
    const prefix = testPrefix();
    const config = loadConfig({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: REDIS_URL, IDPOOL_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef', IDPOOL_WORKER_ID: '1', IDPOOL_WORKER_ID_UNSAFE: '1' });
    const LOCK_TTL = 300;
    let pauseOnce = true;
    let stalledSegment: Segment | undefined;
    // Instance A stalls after reserving (a GC pause, a SIGSTOP) for longer than its lock TTL.
    const stale = await createService(config, {
      redisPrefix: prefix,
      lockTtlMs: LOCK_TTL,
      beforePush: async (_key, segment) => {
        if (!pauseOnce) return;
        pauseOnce = false;
        stalledSegment = segment;
        await new Promise((r) => setTimeout(r, LOCK_TTL * 4));
      },
    });
    services.push(stale);
    const fresh = await createService(config, { redisPrefix: prefix, lockTtlMs: LOCK_TTL });
    services.push(fresh);
    await stale.registry.register({ key: 'orders', mode: 'monotonic', step: 100, maxPoolSize: 1000, maxSizePerSecond: 0, maxSizePerTimes: 1000 });
    await fresh.registry.refresh();
    fresh.refiller.markReset('orders');
    stale.refiller.markReset('orders');

    const staleRefill = stale.refiller.refill('orders');
    await new Promise((r) => setTimeout(r, LOCK_TTL + 100)); // A's lock has expired, A is still paused
    await fresh.refiller.refill('orders');
    expect(await fresh.store.size('orders')).toBe(1000);
    await staleRefill;

    expect(stalledSegment).toBeDefined();
    expect(stale.refiller.stats.fenceRefusals).toBe(1);
    const ids = (await fresh.redis!.lrange(`${prefix}:{orders}:ids`, 0, -1)).map(BigInt);
    expect(ids).toHaveLength(1000);
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
    // The stale segment was dropped, not pushed: none of its ids is pooled.
    expect(ids.every((id) => id >= stalledSegment!.end)).toBe(true);
    const taken = await fresh.dispatcher.take(fresh.registry.get('orders')!, 1000);
    expect(taken.map(BigInt)).toEqual(ids);
  });
});
