import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { entityKeys } from '../../src/redis/keys';
import { RedisPoolStore } from '../../src/pool/redis-pool-store';
import { loadFunctions, registeredName, withLibrary } from '../../src/redis/functions';
import { RedisRefillLock } from '../../src/pool/refill-lock';
import { systemClock } from '../../src/clock';
import { type RedisServer, startRedisServer } from '../support/processes';
import { commandCalls } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { plainTake } from '../support/taken';

/**
 * The service's take of 256 ids or more is one MULTI of idpool_take_open, a
 * native LPOP and idpool_take_close (take_open-4.lua); a smaller one, and
 * every take where a server over maxmemory refuses a MULTI, is the
 * idpool_take function. On a server of the test's own:
 * these cases reset its memory limit and flush its functions.
 */
describeWithServices('RedisPoolStore.take on a private redis-server', { redis: true }, () => {
  let server: RedisServer;
  let redis: Redis;
  let store: RedisPoolStore;
  const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => String(from + i));

  beforeAll(async () => {
    server = await startRedisServer('none', ['--maxmemory-policy', 'noeviction']);
    redis = new Redis(server.url);
    store = new RedisPoolStore(redis);
    await loadFunctions(redis);
  });
  afterEach(async () => {
    await redis.config('SET', 'maxmemory', '0');
    await redis.flushall();
    await loadFunctions(redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  /** An entity whose pool holds ids 1..n, filled in this server's epoch. */
  async function filled(key: string, n: number): Promise<void> {
    await store.reset(key, 0n);
    expect(await store.push(key, ids(1, n), 1n, BigInt(n))).toEqual({ kind: 'ok', size: n });
  }

  it('a take of 256 ids or more pops with one native LPOP inside one MULTI; a smaller one is one function call', async () => {
    await filled('native', 2000);
    await redis.config('RESETSTAT');
    expect(plainTake(await store.take('native', 1000, 0))).toEqual({ kind: 'ok', ids: ids(1, 1000), remaining: 1000 });
    expect(await commandCalls(redis, 'exec', 'fcall', 'lpop', 'rename')).toEqual({
      exec: 1,
      fcall: 2,
      lpop: 1,
      rename: 2,
    });
    await redis.config('RESETSTAT');
    expect(plainTake(await store.take('native', 255, 0))).toEqual({ kind: 'ok', ids: ids(1001, 255), remaining: 745 });
    expect(await commandCalls(redis, 'exec', 'fcall', 'lpop', 'rename')).toEqual({
      exec: 0,
      fcall: 1,
      lpop: 1,
      rename: 0,
    });
    expect(plainTake(await store.take('native', 256, 0))).toEqual({ kind: 'ok', ids: ids(1256, 256), remaining: 489 });
    expect(await commandCalls(redis, 'exec')).toEqual({ exec: 1 });
  });

  it('a refused take pops nothing and leaves the pool under its own key', async () => {
    const k = entityKeys('refused');
    await filled('refused', 1000);
    expect(plainTake(await store.take('refused', 1001, 0))).toEqual({ kind: 'short', size: 1000 });
    expect(plainTake(await store.take('refused', 400, 500))).toMatchObject({ kind: 'ok', ids: ids(1, 400) });
    // The second of the same Redis second would pass 500: refused (one across a second boundary passes).
    const second = await store.take('refused', 300, 500);
    if (second.kind === 'ok') expect(second.ids.toArray()).toEqual(ids(401, 300));
    else expect(second).toMatchObject({ kind: 'rate_limited' });
    await redis.set(k.epoch, 'another-server:epoch');
    expect(plainTake(await store.take('refused', 256, 0))).toEqual({ kind: 'epoch_changed' });
    expect(await redis.exists(k.taking)).toBe(0);
    const left = second.kind === 'ok' ? 701 : 401;
    expect(await redis.lrange(k.ids, 0, -1)).toEqual(ids(left, 1001 - left));
  });

  it('a take that empties the pool leaves no key behind, and the next push fills it', async () => {
    const k = entityKeys('emptied');
    await filled('emptied', 300);
    expect(plainTake(await store.take('emptied', 300, 0))).toEqual({ kind: 'ok', ids: ids(1, 300), remaining: 0 });
    expect(await redis.exists(k.ids, k.taking)).toBe(0);
    expect(plainTake(await store.take('emptied', 256, 0))).toEqual({ kind: 'short', size: 0 });
    expect(await store.push('emptied', ids(301, 300), 301n, 600n)).toEqual({ kind: 'ok', size: 300 });
    expect(plainTake(await store.take('emptied', 300, 0))).toEqual({ kind: 'ok', ids: ids(301, 300), remaining: 0 });
  });

  it('a server without the library gets it back, and the take is made once', async () => {
    await filled('flushed', 1000);
    await redis.call('FUNCTION', 'FLUSH');
    expect(plainTake(await store.take('flushed', 300, 0))).toEqual({ kind: 'ok', ids: ids(1, 300), remaining: 700 });
    await redis.call('FUNCTION', 'FLUSH');
    expect(plainTake(await store.take('flushed', 3, 0))).toEqual({ kind: 'ok', ids: ids(301, 3), remaining: 697 });
    expect(plainTake(await store.take('flushed', 697, 0))).toEqual({ kind: 'ok', ids: ids(304, 697), remaining: 0 });
  });

  it('a call refused for want of the library while another instance loads it is made again, once', async () => {
    await redis.call('FUNCTION', 'FLUSH');
    // Another instance's connection restores the library between this
    // call's refusal and its own look at the server: it finds it loaded.
    const other = new Redis(server.url);
    let calls = 0;
    try {
      const answer = await withLibrary(redis, async () => {
        calls++;
        try {
          return await redis.fcall(registeredName('idpool_lock_acquire'), 1, 'raced-lock', 'holder', 1000, 250);
        } finally {
          if (calls === 1) await loadFunctions(other);
        }
      });
      expect(answer).toBe(1);
      expect(calls).toBe(2);
    } finally {
      other.disconnect();
    }
    // Any other bare ERR is not made again.
    calls = 0;
    await expect(
      withLibrary(redis, async () => {
        calls++;
        return redis.fcall(registeredName('idpool_lock_acquire'), 1, 'raced-lock', 'holder', 'not-a-number', 250);
      }),
    ).rejects.toThrow(/^ERR/);
    expect(calls).toBe(1);
  });

  it('over maxmemory, where a MULTI is refused, takes go on (all or nothing, in order) until the pool is empty', async () => {
    await filled('oom', 1000);
    await redis.set('filler', 'x'.repeat(2 * 1024 * 1024));
    await redis.config('SET', 'maxmemory', '1mb');
    // Redis 7.0 refuses any MULTI there; Redis 7.2 and Valkey one that queues a write, as a take's does.
    await expect(redis.multi().set('x', 'y').exec()).rejects.toThrow(/EXECABORT/);
    expect(plainTake(await store.take('oom', 400, 0))).toEqual({ kind: 'ok', ids: ids(1, 400), remaining: 600 });
    expect(plainTake(await store.take('oom', 601, 0))).toEqual({ kind: 'short', size: 600 });
    expect(plainTake(await store.take('oom', 5, 0))).toEqual({ kind: 'ok', ids: ids(401, 5), remaining: 595 });
    expect(plainTake(await store.take('oom', 595, 0))).toEqual({ kind: 'ok', ids: ids(406, 595), remaining: 0 });
    // A push is what such a server refuses: the pool stays empty, and says so.
    await expect(store.push('oom', ids(1001, 2), 1001n, 1002n)).rejects.toThrow(/^OOM/);
    expect(plainTake(await store.take('oom', 300, 0))).toEqual({ kind: 'short', size: 0 });
  });

  it('the refill lock skips when another refiller holds it, and fails with what the server refused it with', async () => {
    const lock = new RedisRefillLock(redis, systemClock, 10_000);
    const held = await lock.acquire('locked');
    expect(held).not.toBeNull();
    expect(await lock.acquire('locked')).toBeNull();
    await held!.release();
    await redis.set('filler', 'x'.repeat(2 * 1024 * 1024));
    await redis.config('SET', 'maxmemory', '1mb');
    await expect(lock.acquire('locked')).rejects.toThrow(/^OOM/);
  });
});
