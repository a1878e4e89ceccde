import Redis from 'ioredis';
import { type Connection, createConnection } from 'mysql2/promise';
import { afterEach, expect, it } from 'vitest';
import { entityKeys } from '../../src/redis/keys';
import { type Service, createService } from '../../src/service';
import { serviceParts } from '../../src/service/internals';
import { register, takeWhenReady } from '../support/http';
import { type RedisServer, startRedisServer } from '../support/processes';
import { REDIS_URL, clearPrefix, createTestSchema, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { inProcessConfig } from '../support/in-process';

/** The check's period here (the default is 2 s). */
const CHECK_MS = 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits for the first fence check run that starts after now to complete:
 * "within one check interval" counted in runs, not in wall time, which a
 * loaded machine stretches. Runs never overlap, so run n has completed once
 * n have.
 */
async function nextRunDone(s: Service): Promise<void> {
  const next = serviceParts(s).fenceCheck.stats.started + 1;
  await expect
    .poll(() => serviceParts(s).fenceCheck.stats.completed, { timeout: 30 * CHECK_MS, interval: 20 })
    .toBeGreaterThanOrEqual(next);
}

/** Waits until no refill has completed for half a second: the last segment of the fill is pushed. */
async function settled(s: Service): Promise<void> {
  for (let last = -1; last !== serviceParts(s).refiller.stats.refills;) {
    last = serviceParts(s).refiller.stats.refills;
    await sleep(500);
  }
}

describeWithServices(
  'fence check: a database restored under full pools is carried past the fence within one check interval (issue 29, bugs 4 and 2)',
  { mysql: true, redis: true },
  () => {
    let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
    let service: Service | undefined;
    let redisServer: RedisServer | undefined;
    let prefix: string | undefined;
    let sql: Connection | undefined;
    afterEach(async () => {
      await service?.stop();
      service = undefined;
      await sql?.end();
      sql = undefined;
      if (prefix) {
        const redis = new Redis(REDIS_URL);
        await clearPrefix(redis, prefix);
        redis.disconnect();
        prefix = undefined;
      }
      await redisServer?.stop();
      redisServer = undefined;
      await schema?.drop();
      schema = undefined;
    });

    /** A service on its own schema and the given Redis, with one entity `orders` whose pool is full. */
    const start = async (redisUrl: string, redisPrefix?: string) => {
      schema = await createTestSchema();
      const config = inProcessConfig({
        IDPOOL_DATABASE_URL: schema.url,
        IDPOOL_REDIS_URL: redisUrl,
        IDPOOL_FENCE_CHECK_MS: String(CHECK_MS),
      });
      const s = await createService(config, { redisPrefix });
      service = s;
      const url = `http://127.0.0.1:${await s.listen(0)}`;
      const secret = await register(url, {
        key: 'orders',
        // A refill brings at least one step of 5,000 whatever demand was measured, and the pool is
        // refilled below 20 % of its target (1,000–2,000): full, it stays above that for seconds of slow takes.
        step: 5000,
        maxSizePerTimes: 100,
        maxSizePerSecond: 0,
        maxPoolSize: 10_000,
        minSizePercent: 20,
      });
      // Asked again after a 503 with Retry-After, as a client does (CI at 16:31: a take of 8,000 in a row met the
      // pool short for longer than the shortage wait once, and the count came out 100 short).
      const take = async (count: number) => {
        const res = await takeWhenReady(url, 'orders', secret, count);
        return res.status === 200 ? res.body.ids : [];
      };
      // The test's reads and its restore on a connection of its own: the service's pool bounds a statement at
      // 3 s, which the shared server busy with other files' schemas has outlasted (a restore may take longer).
      const db = (sql = await createConnection({ uri: schema.url, supportBigNumbers: true, bigNumberStrings: true }));
      const offset = async () =>
        BigInt(
          (
            (await db.query("SELECT current_offset AS c FROM application WHERE entity_key = 'orders'")) as [
              { c: string }[],
              unknown,
            ]
          )[0][0].c,
        );
      const restoreTo = (to: bigint) =>
        db.query("UPDATE application SET current_offset = ? WHERE entity_key = 'orders'", [to.toString()]);
      const behind = () =>
        serviceParts(s)
          .ops.alarms.recent()
          .filter((a) => a.name === 'database_behind');
      return { s, url, take, offset, restoreTo, behind };
    };

    it('bug 4: a restore under a full pool (no refill due) is carried within one check interval, one database_behind', async () => {
      prefix = testPrefix();
      const { s, take, offset, restoreTo, behind } = await start(REDIS_URL, prefix);
      const backup = await offset();
      const seen = new Set<string>();
      // 2,000 of the first step's 5,000: 3,000 stay, above the largest watermark (20 % of 10,000). With 3,000 taken
      // the pool sat at the watermark itself (2,000 of 2,000 measured), and in CI at 15:17 the check run carried
      // nothing: most likely a refill at the watermark held the lock through it.
      for (let i = 0; i < 20; i++) for (const id of await take(100)) seen.add(id);
      expect(seen.size).toBe(2000);
      // The pool is above its watermark (refilled if the 2,000 taken took it below), and stays so: nothing takes from now on.
      const fenceKey = entityKeys('orders', prefix).fence;
      const redis = new Redis(REDIS_URL);
      try {
        await expect
          .poll(async () => serviceParts(s).poolStore.size('orders'), { timeout: 10_000 })
          .toBeGreaterThanOrEqual(serviceParts(s).refiller.lowWatermark(serviceParts(s).registry.get('orders')!));
        await settled(s);
        const fence = BigInt((await redis.get(fenceKey))!);
        expect(await offset()).toBeGreaterThan(fence);
        const refills = serviceParts(s).refiller.stats.refills;

        // The restore: the row goes back to before every id handed out so far (committed when this resolves).
        await restoreTo(backup);
        const restoredAt = Date.now();
        await nextRunDone(s);
        expect(await offset()).toBeGreaterThan(fence);
        expect(serviceParts(s).fenceCheck.stats.carried).toBe(1);
        // No refill did it: the pool was full and nothing took from it.
        expect(serviceParts(s).refiller.stats.refills).toBe(refills);
        // Periodic, not drain-paced: a few intervals at most even on a loaded machine (the pool would last for ever).
        expect(Date.now() - restoredAt).toBeLessThan(10 * CHECK_MS);

        // Once for the episode, however many runs see the entity after.
        await sleep(3 * CHECK_MS);
        expect(behind()).toHaveLength(1);
        expect(behind()[0]).toMatchObject({ severity: 'critical', entityKey: 'orders' });
        expect(behind()[0].details).toMatchObject({ databaseOffset: backup.toString(), record: 'fence' });
        expect(BigInt(behind()[0].details!.fence as string)).toBe(fence);
        expect(BigInt(behind()[0].details!.carriedTo as string)).toBeGreaterThan(fence);
        expect(
          serviceParts(s)
            .ops.alarms.recent()
            .filter((a) => a.name === 'fence_refused'),
        ).toHaveLength(0);

        // And the ids that follow are new (the pool's, then the carried offset's).
        for (let i = 0; i < 80; i++)
          for (const id of await take(100)) {
            expect(seen.has(id)).toBe(false);
            seen.add(id);
          }
        expect(seen.size).toBe(10_000);
      } finally {
        redis.disconnect();
      }
    }, 60_000);

    it('bug 2: a restore under full pools, one check interval, then Redis restarted empty: no id twice', async () => {
      redisServer = await startRedisServer('none');
      const { s, take, offset, restoreTo, behind } = await start(redisServer.url);
      const backup = await offset();
      const seen = new Map<string, number>();
      const keep = (ids: string[]) => {
        for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
      };
      for (let i = 0; i < 50; i++) keep(await take(100));
      expect(seen.size).toBe(5000);
      // Full again: a refill below the watermark brings a step of 5,000.
      await expect
        .poll(async () => serviceParts(s).poolStore.size('orders'), { timeout: 10_000 })
        .toBeGreaterThanOrEqual(4000);
      await settled(s);
      // Then two clients keep taking, slowly: 400 ids a second leave the pool above its watermark for seconds,
      // so no refill meets the fence in the window and only the check can carry the database.
      let running = true;
      const client = async () => {
        while (running) {
          keep(await take(20));
          await sleep(100);
        }
      };
      const clients = [client(), client()];
      try {
        const refills = serviceParts(s).refiller.stats.refills;
        await restoreTo(backup);
        // The window: one check interval, that is until the first run started after the restore has completed.
        await nextRunDone(s);
        expect(serviceParts(s).refiller.stats.refills).toBe(refills);
        expect(behind()).toHaveLength(1);
        // Redis loses everything: the fence, the pools, the epoch. The pools are rebuilt from the database.
        await redisServer.kill9();
        await redisServer.restart();
        const before = seen.size;
        const deadline = Date.now() + 30_000;
        while (seen.size < before + 3000 && Date.now() < deadline) await sleep(50);
        expect(seen.size).toBeGreaterThanOrEqual(before + 3000);
      } finally {
        running = false;
        await Promise.all(clients);
      }
      expect([...seen.entries()].filter(([, n]) => n > 1)).toEqual([]);
      // Every id handed out is below the offset the database ended at.
      const highest = [...seen.keys()].reduce((a, b) => (BigInt(b) > a ? BigInt(b) : a), 0n);
      expect(await offset()).toBeGreaterThan(highest);
    }, 90_000);
  },
);
