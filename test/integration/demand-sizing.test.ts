import { expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/redis/keys';
import { sleep, waitFor } from '../support/wait';
import { suiteInstances } from '../support/suite-instances';

async function poolView(
  base: string,
  key: string,
): Promise<{ size: number; target: number; max: number; lowWatermark: number }> {
  const res = await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN });
  return res.body.pool;
}

/**
 * Pools sized by demand (docs/design.md, issue "Scale out"), on a Redis server of
 * the test's own, so its memory is the test's to measure.
 */
describeWithServices('pools sized by demand (MariaDB + a private Redis, real process)', { mysql: true }, () => {
  const run = suiteInstances((base) => ({ instance: base }), { privateRedis: true });

  it('idle entities hold one floor each: 200 default registrations cost a small, bounded amount of Redis', async () => {
    const base = run.instance.url;
    const before = Number(/used_memory:(\d+)/.exec(await run.direct.info('memory'))![1]);
    const keys = Array.from({ length: 200 }, (_, i) => uniqueKey(`idle${i}`));
    const started = Date.now();
    for (let i = 0; i < keys.length; i += 10)
      await Promise.all(keys.slice(i, i + 10).map((key) => register(base, { key })));
    const seconds = (Date.now() - started) / 1000;
    await waitFor(
      async () => (await Promise.all(keys.map((k) => run.direct.llen(entityKeys(k).ids)))).every((n) => n === 1000),
      { message: 'every pool at its floor', timeoutMs: 10_000 },
    );
    const view = await poolView(base, keys[0]);
    expect(view).toEqual({ size: 1000, target: 1000, max: 300_000, lowWatermark: 800 });
    const after = Number(/used_memory:(\d+)/.exec(await run.direct.info('memory'))![1]);
    const perEntity = (after - before) / keys.length;
    process.stdout.write(
      `200 idle entities: ${seconds.toFixed(1)} s to register, ${(perEntity / 1024).toFixed(1)} KiB of Redis each\n`,
    );
    // A floor of 1,000 ids is ~10 KiB of list; a pool filled to maxPoolSize (300,000 ids) was 1.4 MiB.
    expect(perEntity).toBeLessThan(64 * 1024);
  });

  it('an entity whose demand jumps from idle to maxSizePerSecond sees no pool_exhausted after its first second, and its target grows', async () => {
    const base = run.instance.url;
    const key = uniqueKey('burst');
    // maxSizePerSecond 5000 (the default), batches of 1,000: five requests a second.
    const secret = await register(base, { key });
    await waitFor(async () => (await poolView(base, key)).size === 1000, {
      message: 'floor filled',
      timeoutMs: 10_000,
    });
    await sleep(1500); // idle: the sweep has observed a take total of 0 for a while
    const started = Date.now();
    const outcomes: { at: number; status: number; code?: string }[] = [];
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
    await waitFor(async () => (await poolView(base, key)).size >= view.lowWatermark, {
      message: 'pool deepened towards its target',
      timeoutMs: 10_000,
    });
  });

  it('direct pops count as demand too (pushed − size)', async () => {
    const base = run.instance.url;
    const key = uniqueKey('direct');
    await register(base, { key, maxSizePerSecond: 0 });
    await waitFor(async () => (await poolView(base, key)).size === 1000, {
      message: 'floor filled',
      timeoutMs: 10_000,
    });
    for (let i = 0; i < 20; i++) {
      const got = (await run.direct.call(
        'FCALL',
        'idpool_pop',
        2,
        entityKeys(key).ids,
        entityKeys(key).epoch,
        500,
      )) as string[];
      if (got.length === 0) await sleep(60);
      await sleep(40);
    }
    await waitFor(async () => (await poolView(base, key)).target > 1000, {
      message: 'target raised by direct demand',
      timeoutMs: 15_000,
    });
  });
});
