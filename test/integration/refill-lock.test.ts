import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock';
import { entityKeys } from '../../src/redis/keys';
import { loadFunctions } from '../../src/redis/functions';
import { RedisRefillLock } from '../../src/pool/refill-lock';
import { uniqueKey } from '../support/configs';
import { takeIds } from '../support/http';
import { type RedisServer, startRedisServer } from '../support/processes';
import { type HolderFault, faultHolder, stalledRefill } from '../support/refill-holder';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { sleep, waitFor } from '../support/wait';

/**
 * The refill lock is a lease of about a second that its holder extends
 * while its refill runs (src/pool/refill-lock.ts): a refiller that dies or
 * loses its connection blocks its entity for about a second, not for a
 * fixed TTL, and a live one keeps its lock however long its refill takes.
 */
describeWithServices(
  'refill lock: a lease extended while its holder lives (private redis-server, MariaDB)',
  { mysql: true },
  () => {
    let redisServer: RedisServer;
    let schema: Awaited<ReturnType<typeof createTestSchema>>;
    let direct: Redis;
    const env = () => ({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: redisServer.url });

    beforeAll(async () => {
      schema = await createTestSchema();
      redisServer = await startRedisServer('none');
      direct = new Redis(redisServer.url);
      await loadFunctions(direct);
    });

    afterAll(async () => {
      direct?.disconnect();
      await redisServer?.stop();
      await schema?.drop();
    });

    /** What every fault of the holder must cost at most: no id twice, none of the held segment, every survivor serving within 2 s. */
    const expectRecovered = (result: HolderFault, holderPid: number, segment: { start: bigint; end: bigint }) => {
      // The holder kept its lease of one second for the whole hold (2.5 s): nobody served.
      expect(result.servedWhileHeld).toBe(0);
      expect(result.lock.value).toMatch(new RegExp(`:${holderPid}:[0-9a-f]+@[0-9a-f]+:[0-9a-f]+$`));
      expect(result.lock.pttl).toBeGreaterThan(0);
      expect(result.lock.pttl).toBeLessThanOrEqual(1000);
      expect(result.unexpected).toEqual([]);
      expect(result.toIds).toHaveLength(2);
      for (const ms of result.toIds) expect(ms).toBeLessThan(2000);
      expect(new Set(result.ids).size).toBe(result.ids.length);
      expect(result.ids.filter((id) => BigInt(id) >= segment.start && BigInt(id) < segment.end)).toEqual([]);
    };

    it('kill -9 of the instance holding the lock mid-refill: both survivors serve again within 2 s, no id twice', async () => {
      const key = uniqueKey('killed');
      const stalled = await stalledRefill(env(), key);
      try {
        const result = await faultHolder(stalled, key, direct, () => stalled.holder.kill9());
        console.log(`kill -9 of the holder: ids again after ${result.toIds.join(' / ')} ms`);
        expectRecovered(result, stalled.holder.proc.pid!, stalled.segment);
      } finally {
        await stalled.stop();
      }
    });

    it('a lock orphaned by a dropped connection lapses: survivors serve within 2 s; the late segment of its live holder is refused', async () => {
      const key = uniqueKey('dropped');
      const stalled = await stalledRefill(env(), key);
      try {
        const result = await faultHolder(stalled, key, direct, async () => {
          await direct.client('KILL', 'ID', String(stalled.clientId));
        });
        console.log(`holder's connection killed: ids again after ${result.toIds.join(' / ')} ms`);
        expectRecovered(result, stalled.holder.proc.pid!, stalled.segment);
        // The holder lived on (reconnected): its refill ends now, and its older segment is refused by the fence.
        stalled.holder.proc.kill('SIGUSR2');
        await waitFor(() => stalled.holder.output().includes('"alarm":"fence_refused"'), {
          message: 'the fence refusing the held segment',
        });
        const later: string[] = [];
        for (const instance of [stalled.holder, ...stalled.survivors]) {
          const res = await takeIds(instance.url, key, stalled.secret, 10);
          expect(res.status).toBe(200);
          later.push(...res.body.ids);
        }
        const all = [...result.ids, ...later];
        expect(new Set(all).size).toBe(all.length);
        expect(all.filter((id) => BigInt(id) >= stalled.segment.start && BigInt(id) < stalled.segment.end)).toEqual([]);
      } finally {
        await stalled.stop();
      }
    });

    it('a lock is released by its holder only, taken over when nobody extends it, and lapses once its connection closes', async () => {
      const prefix = `idpool-t-lock-${process.pid}`;
      const lockKey = (key: string) => entityKeys(key, prefix).lock;
      const own = new Redis(redisServer.url);
      // Leases of 1 s, renewed every 250 ms: a loaded test process stays well inside them.
      const a = new RedisRefillLock(own, systemClock, 1000, prefix, 'host-a:1');
      const b = new RedisRefillLock(direct, systemClock, 1000, prefix, 'host-b:2');
      try {
        const held = await a.acquire('e');
        expect(held).not.toBeNull();
        expect(await b.acquire('e')).toBeNull();
        // Held past three leases.
        await sleep(3000);
        expect(await direct.get(lockKey('e'))).toMatch(/^host-a:1:/);
        expect(await b.acquire('e')).toBeNull();
        await held!.release();
        const next = await b.acquire('e');
        expect(next).not.toBeNull();
        // A's release comes late (a lost lock): B's lock stays.
        await held!.release();
        expect(await direct.get(lockKey('e'))).toMatch(/^host-b:2:/);
        await next!.release();

        // A lock its holder stopped renewing: kept while more than a quarter lease is left, taken over below; one with no expiry too.
        await direct.set(lockKey('dead'), 'gone-host:9:abc', 'PX', 900);
        expect(await b.acquire('dead')).toBeNull();
        await direct.set(lockKey('dead'), 'gone-host:9:abc', 'PX', 200);
        const takenOver = await b.acquire('dead');
        expect(takenOver).not.toBeNull();
        expect(await direct.get(lockKey('dead'))).toMatch(/^host-b:2:/);
        expect(await direct.pttl(lockKey('dead'))).toBeGreaterThan(200);
        await takenOver!.release();
        await direct.set(lockKey('forever'), 'by-hand');
        const fromForever = await b.acquire('forever');
        expect(fromForever).not.toBeNull();
        await fromForever!.release();

        // The holder's connection closes: it renews no more, and the lock lapses within a lease though its holder lives.
        const cut = await a.acquire('cut');
        expect(cut).not.toBeNull();
        await sleep(1500); // renewed meanwhile
        const killedAt = Date.now();
        await direct.client('KILL', 'ID', String(await own.client('ID')));
        await waitFor(() => own.status === 'ready', { message: 'the connection back' });
        await waitFor(async () => (await direct.exists(lockKey('cut'))) === 0, { intervalMs: 10, timeoutMs: 3000 });
        expect(Date.now() - killedAt).toBeLessThanOrEqual(1100);
        await cut!.release();
      } finally {
        own.disconnect();
      }
    });
  },
);
