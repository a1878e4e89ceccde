import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueKey } from '../helpers/configs';
import { ADMIN_TOKEN, call, register, takeIds } from '../helpers/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../helpers/processes';
import { createTestSchema, servicesAvailable } from '../helpers/services';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function poolView(base: string, key: string): Promise<{ size: number; target: number; max: number; lowWatermark: number }> {
  const res = await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN });
  return res.body.pool;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Pools sized by demand (DESIGN.md, issue "Scale out"), on a Redis server of
 * the test's own, so its memory is the test's to measure.
 */
describe('pools sized by demand (MariaDB + a private Redis, real process)', () => {
  let available = false;
  let redisServer: RedisServer | undefined;
  let instance: Instance | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  let redis: Redis | undefined;

  beforeAll(async () => {
    available = await servicesAvailable({ mysql: true });
    if (!available) return;
    schema = await createTestSchema();
    redisServer = await startRedisServer('none');
    redis = new Redis(redisServer.url);
    instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: redisServer.url });
  });

  afterAll(async () => {
    redis?.disconnect();
    await instance?.stop();
    await redisServer?.stop();
    await schema?.drop();
  });

  it('idle entities hold one floor each: 200 default registrations cost a small, bounded amount of Redis', async (ctx) => {
    if (!available) return ctx.skip();
    const base = instance!.url;
    const before = Number(/used_memory:(\d+)/.exec(await redis!.info('memory'))![1]);
    const keys = Array.from({ length: 200 }, (_, i) => uniqueKey(`idle${i}`));
    const started = Date.now();
    for (let i = 0; i < keys.length; i += 10) await Promise.all(keys.slice(i, i + 10).map((key) => register(base, { key })));
    const seconds = (Date.now() - started) / 1000;
    await waitFor('every pool at its floor', async () => (await Promise.all(keys.map((k) => redis!.llen(`idpool:{${k}}:ids`)))).every((n) => n === 1000));
    const view = await poolView(base, keys[0]);
    expect(view).toEqual({ size: 1000, target: 1000, max: 300_000, lowWatermark: 800 });
    const after = Number(/used_memory:(\d+)/.exec(await redis!.info('memory'))![1]);
    const perEntity = (after - before) / keys.length;
    process.stdout.write(`200 idle entities: ${(seconds).toFixed(1)} s to register, ${(perEntity / 1024).toFixed(1)} KiB of Redis each\n`);
    // A floor of 1,000 ids is ~10 KiB of list; a pool filled to maxPoolSize (300,000 ids) was 1.4 MiB.
    expect(perEntity).toBeLessThan(64 * 1024);
  });

  it('an entity whose demand jumps from idle to maxSizePerSecond sees no pool_exhausted after its first second, and its target grows', async (ctx) => {
    if (!available) return ctx.skip();
    const base = instance!.url;
    const key = uniqueKey('burst');
    // maxSizePerSecond 5000 (the default), batches of 1,000: five requests a second.
    const secret = await register(base, { key });
    await waitFor('floor filled', async () => (await poolView(base, key)).size === 1000);
    await sleep(1500); // idle: the sweep has observed a take total of 0 for a while
    const started = Date.now();
    const outcomes: Array<{ at: number; status: number; code?: string }> = [];
    let served = 0;
    while (Date.now() - started < 4000) {
      const tickStart = Date.now();
      const res = await takeIds(base, key, secret, 1000);
      outcomes.push({ at: Date.now() - started, status: res.status, code: (res.body as any)?.error?.code });
      if (res.status === 200) served += res.body.ids.length;
      await sleep(Math.max(0, 200 - (Date.now() - tickStart)));
    }
    const exhaustedAfterFirstSecond = outcomes.filter((o) => o.at > 1000 && o.code === 'pool_exhausted');
    expect(exhaustedAfterFirstSecond).toEqual([]);
    expect(outcomes.filter((o) => o.status !== 200 && o.status !== 429 && o.code !== 'pool_exhausted')).toEqual([]);
    expect(served).toBeGreaterThanOrEqual(12_000);
    const view = await poolView(base, key);
    // Thousands of ids a second for a 60 s horizon: far above the floor.
    expect(view.target).toBeGreaterThan(100_000);
    expect(view.target).toBeLessThanOrEqual(view.max);
    await waitFor('pool deepened towards its target', async () => (await poolView(base, key)).size >= view.lowWatermark);
  });

  it('direct pops count as demand too (pushed − size)', async (ctx) => {
    if (!available) return ctx.skip();
    const base = instance!.url;
    const key = uniqueKey('direct');
    await register(base, { key, maxSizePerSecond: 0 });
    await waitFor('floor filled', async () => (await poolView(base, key)).size === 1000);
    for (let i = 0; i < 20; i++) {
      const got = (await redis!.call('FCALL', 'idpool_pop', 2, `idpool:{${key}}:ids`, `idpool:{${key}}:server`, 500)) as string[];
      if (got.length === 0) await sleep(60);
      await sleep(40);
    }
    await waitFor('target raised by direct demand', async () => (await poolView(base, key)).target > 1000, 15_000);
  });
});
