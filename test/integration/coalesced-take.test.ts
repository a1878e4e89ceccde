import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RateLimitedError } from '../../src/errors';
import type { TakeResult } from '../../src/pool/pool-store';
import { type Service, createService } from '../../src/service';
import { serviceParts } from '../../src/service/internals';
import { uniqueKey } from '../support/configs';
import { call, registerNew } from '../support/http';
import { type Instance } from '../support/processes';
import { REDIS_URL, type TestSchema, clearPrefix, createTestSchema, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { sleep } from '../support/wait';
import { inProcessConfig } from '../support/in-process';
import { suiteInstances } from '../support/suite-instances';

describeWithServices(
  'coalesced takes on Redis (in-process service, MariaDB + Redis)',
  { mysql: true, redis: true },
  () => {
    let schema: TestSchema;
    let service: Service;
    let redis: Redis;
    let prefix: string;
    /** Counts of the take calls that reached the store (one FCALL each). */
    const fcalls: number[] = [];

    beforeAll(async () => {
      schema = await createTestSchema();
      prefix = testPrefix();
      const config = inProcessConfig({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: REDIS_URL });
      service = await createService(config, { redisPrefix: prefix, ops: { requestLog: 'off' } });
      const { poolStore } = serviceParts(service);
      const take = poolStore.take.bind(poolStore);
      poolStore.take = (entityKey: string, count: number, maxPerSecond: number): Promise<TakeResult> => {
        fcalls.push(count);
        return take(entityKey, count, maxPerSecond);
      };
      redis = new Redis(REDIS_URL);
    });

    afterAll(async () => {
      await service?.stop();
      await clearPrefix(redis, prefix);
      redis.disconnect();
      await schema.drop();
    });

    const registerEntity = async (key: string, body: Record<string, unknown>) => {
      await serviceParts(service).registry.register({
        key,
        mode: 'monotonic',
        step: 1000,
        maxPoolSize: 20_000,
        minSizePercent: 50,
        maxSizePerTimes: 1000,
        ...body,
      });
      const entity = serviceParts(service).registry.get(key)!;
      await serviceParts(service).refiller.refill(key);
      return entity;
    };

    it('64 takes of one turn are one FCALL for their sum; each gets its own ids, in arrival order', async () => {
      const entity = await registerEntity(uniqueKey('coalesce'), { maxSizePerSecond: 0 });
      fcalls.length = 0;
      const counts = Array.from({ length: 64 }, (_, i) => 1 + (i % 5));
      const answers = await Promise.all(counts.map((n) => serviceParts(service).takes.take(entity, n)));
      expect(fcalls).toEqual([counts.reduce((a, b) => a + b, 0)]);
      answers.forEach((ids, i) => expect(ids).toHaveLength(counts[i]));
      const flat = answers.flatMap((ids) => ids.toArray()).map(Number);
      expect(flat).toEqual([...flat].sort((a, b) => a - b));
      expect(new Set(flat).size).toBe(flat.length);
    });

    it('a group large enough for the native LPOP (held joined, then sliced) hands each take its own ids, in arrival order', async () => {
      const entity = await registerEntity(uniqueKey('joined'), { maxSizePerSecond: 0, step: 5000 });
      expect(await serviceParts(service).poolStore.size(entity.key)).toBeGreaterThanOrEqual(5000);
      fcalls.length = 0;
      const counts = Array.from({ length: 64 }, (_, i) => 5 + ((i * 7) % 40));
      const total = counts.reduce((a, b) => a + b, 0);
      const answers = await Promise.all(counts.map((n) => serviceParts(service).takes.take(entity, n)));
      expect(fcalls).toEqual([total]);
      expect(total).toBeGreaterThan(256);
      const flat: number[] = [];
      answers.forEach((ids, i) => {
        expect(ids.toArray()).toHaveLength(counts[i]);
        expect(JSON.parse(ids.toJson())).toEqual(ids.toArray());
        flat.push(...ids.toArray().map(Number));
      });
      // One monotonic pool popped in one call: every take's ids follow the one before's, with no gap.
      expect(flat).toEqual(Array.from({ length: total }, (_, i) => flat[0] + i));
    });

    it('the per-second limit stays exact: 64 takes of 3 against 100 per second serve 33 and limit 31', async () => {
      const entity = await registerEntity(uniqueKey('limited'), {
        maxSizePerSecond: 100,
        maxSizePerTimes: 10,
        step: 100,
        maxPoolSize: 5000,
      });
      // Start just after a Redis second begins, so the burst stays within one second.
      // ioredis types TIME's reply as numbers; the server sends strings.
      const [, micros] = (await redis.time()) as unknown as [string, string];
      await sleep(1000 - Number(micros) / 1000 + 20);
      fcalls.length = 0;
      const outcomes = await Promise.all(
        Array.from({ length: 64 }, () =>
          serviceParts(service)
            .takes.take(entity, 3)
            .then(
              (ids) => ids.length,
              (err) => err,
            ),
        ),
      );
      const served = outcomes.filter((o) => typeof o === 'number');
      const limited = outcomes.filter((o) => o instanceof RateLimitedError);
      expect(served).toHaveLength(33);
      expect(limited).toHaveLength(31);
      // The sum was refused, then each request was counted as itself, in arrival order: the first 33.
      expect(fcalls[0]).toBe(192);
      expect(outcomes.slice(0, 33).every((o) => o === 3)).toBe(true);
    });

    it('a shortage of the sum answers each request alone, all or nothing, in arrival order', async () => {
      const entity = await registerEntity(uniqueKey('short'), {
        maxSizePerSecond: 0,
        step: 100,
        maxPoolSize: 2000,
        maxSizePerTimes: 100,
      });
      const size = await serviceParts(service).poolStore.size(entity.key);
      const first = await serviceParts(service).takes.take(entity, size - 6); // 6 left
      fcalls.length = 0;
      const answers = await Promise.all([0, 1, 2].map(() => serviceParts(service).takes.take(entity, 4)));
      // The sum (12) did not fit; alone, the first fit, the second and third waited for a refill.
      expect(fcalls[0]).toBe(12);
      expect(fcalls[1]).toBe(4);
      for (const ids of answers) expect(ids).toHaveLength(4);
      const flat = [first, ...answers].flatMap((ids) => ids.toArray()).map(Number);
      expect(flat).toEqual([...flat].sort((x, y) => x - y));
      expect(new Set(flat).size).toBe(flat.length);
    });
  },
);

describeWithServices(
  'coalesced takes across two service processes (MariaDB + Redis)',
  { mysql: true, redis: true },
  () => {
    const CLIENTS = 64;
    const REQUESTS = 40;
    /** A pool the load of both instances keeps busy. */
    const SHARED_POOL = { step: 500, maxPoolSize: 50_000, maxSizePerTimes: 100 };
    const two = suiteInstances((base) => ({ a: base, b: base }));
    const instances = () => [two.a, two.b];

    it(`${CLIENTS} sequential clients on 2 instances: each client's ids increase, none is handed out twice`, async (ctx) => {
      const { key, secret } = await registerNew(instances()[0].url, 'clients', SHARED_POOL);
      const perClient: bigint[][] = [];
      let unavailable = 0;
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          const mine: bigint[] = [];
          perClient.push(mine);
          for (let n = 0; n < REQUESTS; n++) {
            // Half the clients on each instance; counts vary so groups mix sizes.
            const res = await call<{ ids: string[] }>(`${instances()[c % 2].url}/apps/${key}/ids`, {
              token: secret,
              body: { count: 1 + ((c + n) % 7) },
            });
            if (res.status === 503) {
              unavailable++; // a refill slower than the shortage wait on this loaded machine: retry
              await sleep(20);
              continue;
            }
            expect(res.status).toBe(200);
            expect(res.body.ids).toHaveLength(1 + ((c + n) % 7));
            for (const id of res.body.ids) mine.push(BigInt(id));
          }
        }),
      );
      for (const mine of perClient) for (let i = 1; i < mine.length; i++) expect(mine[i] > mine[i - 1]).toBe(true);
      const all = perClient.flat();
      expect(new Set(all).size).toBe(all.length);
      expect(all.length).toBeGreaterThan(CLIENTS * REQUESTS * 2);
      await ctx.annotate?.(`${all.length} ids, ${unavailable} answers of 503 retried`);
    });

    it('Idempotency-Key is unchanged: a retry on the other instance replays the same ids, concurrent repeats never get other ids', async () => {
      const { key, secret } = await registerNew(instances()[0].url, 'idem', SHARED_POOL);
      const take = (instance: Instance, requestKey: string, count: number) =>
        call<{ ids: string[] }>(`${instance.url}/apps/${key}/ids`, {
          token: secret,
          body: { count },
          headers: { 'idempotency-key': requestKey },
        });
      // 32 clients, each its own key, all in one burst (coalesced), then each retried on the other instance.
      const first = await Promise.all(Array.from({ length: 32 }, (_, c) => take(instances()[c % 2], `k-${c}`, 3)));
      const again = await Promise.all(
        Array.from({ length: 32 }, (_, c) => take(instances()[(c + 1) % 2], `k-${c}`, 3)),
      );
      first.forEach((res, c) => {
        expect(res.status).toBe(200);
        expect(res.headers.get('idempotent-replayed')).toBeNull();
        expect(again[c].status).toBe(200);
        expect(again[c].headers.get('idempotent-replayed')).toBe('true');
        expect(again[c].body.ids).toEqual(res.body.ids);
      });
      const distinct = first.flatMap((r) => r.body.ids);
      expect(new Set(distinct).size).toBe(32 * 3);
      // One key sent 8 times at once (4 per instance) beside 24 other requests: every 200 carries the same ids.
      const burst = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) => take(instances()[i % 2], 'shared', 5)),
        ...Array.from({ length: 24 }, (_, i) =>
          call<{ ids: string[] }>(`${instances()[i % 2].url}/apps/${key}/ids`, { token: secret, body: { count: 5 } }),
        ),
      ]);
      const shared = burst.slice(0, 8).filter((r) => r.status === 200);
      expect(shared.length).toBeGreaterThanOrEqual(1);
      for (const r of shared) expect(r.body.ids).toEqual(shared[0].body.ids);
      for (const r of burst.slice(0, 8)) expect([200, 503]).toContain(r.status);
      const others = burst.slice(8).flatMap((r) => (r.status === 200 ? r.body.ids : []));
      const everything = [...distinct, ...shared[0].body.ids, ...others];
      expect(new Set(everything).size).toBe(everything.length);
    });
  },
);
