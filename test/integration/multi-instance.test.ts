import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, registerNew, SMALL_POOL, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import {
  REDIS_URL,
  SQL_SERVERS,
  type TestSchema,
  createTestSchema,
  testPrefix,
  sharedRedisEnv,
} from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/redis/keys';

const INSTANCES = 3;
const CLIENTS = 200;
const TARGET_IDS = 200_000;

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(
    `three service instances on one database and Redis (${name})`,
    { [server]: true, redis: true },
    () => {
      let schema: TestSchema;
      let instances: Instance[] = [];
      let redis: Redis;
      const prefix = testPrefix();

      beforeAll(async () => {
        schema = await createTestSchema(server);
        const env = { IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv(prefix) };
        instances = await Promise.all(Array.from({ length: INSTANCES }, () => startInstance(env)));
        redis = new Redis(REDIS_URL);
      });

      afterAll(async () => {
        for (const i of instances) {
          // A crashed instance is a finding: show why.
          if (i.proc.exitCode !== null || i.proc.signalCode !== null)
            process.stderr.write(`instance on ${i.port} died:\n${i.output().slice(-3000)}\n`);
        }
        await Promise.all(instances.map((i) => i.stop()));
        redis.disconnect();
        await schema.drop();
      });

      it(`hands out ${TARGET_IDS} ids to ${CLIENTS} concurrent clients in singles and batches, plus direct LPOP, without a duplicate`, async (ctx) => {
        const { key, secret } = await registerNew(instances[0].url, 'orders', {
          step: 1000,
          maxPoolSize: 60_000,
          maxSizePerTimes: 1000,
        });
        const ids: string[] = [];
        let served = 0;
        let exhausted = 0;
        const take = async (client: number, count: number) => {
          const res = await takeIds(instances[client % INSTANCES].url, key, secret, count);
          if (res.status === 200) {
            expect(res.body.ids).toHaveLength(count);
            for (const id of res.body.ids) ids.push(id);
            served += count;
          } else if (res.status === 503) {
            exhausted++;
            await new Promise((r) => setTimeout(r, 20));
          } else throw new Error(`unexpected ${res.status} ${JSON.stringify(res.body)}`);
        };
        const clients = Array.from({ length: CLIENTS }, async (_, c) => {
          let n = 0;
          while (served < TARGET_IDS) {
            // Mostly batches, one single in four, batch sizes varied per client.
            await take(c + n, n % 4 === 0 ? 1 : 50 + ((c * 7 + n) % 150));
            n++;
          }
        });
        // A trusted consumer popping the list directly at the same time.
        const direct: string[] = [];
        const lpop = (async () => {
          while (served < TARGET_IDS) {
            const popped = await redis.lpop(entityKeys(key, prefix).ids, 100);
            if (popped) direct.push(...popped);
            await new Promise((r) => setTimeout(r, 5));
          }
        })();
        await Promise.all([...clients, lpop]);

        const all = [...ids, ...direct];
        expect(ids.length).toBeGreaterThanOrEqual(TARGET_IDS);
        expect(direct.length).toBeGreaterThan(0);
        expect(new Set(all).size).toBe(all.length);
        await ctx.annotate?.(`${ids.length} ids over HTTP, ${direct.length} by LPOP, ${exhausted} answers of 503`);
      });

      it('a monotonic entity taken by one sequential client across all instances is strictly increasing', async () => {
        const { key, secret } = await registerNew(instances[1].url, 'seq', {
          ...SMALL_POOL,
          maxPoolSize: 2000,
          maxSizePerTimes: 200,
        });
        const redisIds: string[] = [];
        let previous = -1n;
        for (let i = 0; i < 600; i++) {
          const res = await takeIds(instances[i % INSTANCES].url, key, secret, i % 3 === 0 ? 1 : 17);
          if (res.status === 503) continue;
          expect(res.status).toBe(200);
          for (const id of res.body.ids) {
            expect(BigInt(id) > previous, `${id} after ${previous}`).toBe(true);
            previous = BigInt(id);
          }
          if (i % 50 === 0) {
            // Direct pops interleave with HTTP ones and keep the order too.
            const popped = await redis.lpop(entityKeys(key, prefix).ids, 5);
            for (const id of popped ?? []) {
              expect(BigInt(id) > previous).toBe(true);
              previous = BigInt(id);
              redisIds.push(id);
            }
          }
        }
        expect(redisIds.length).toBeGreaterThan(0);
      });

      it("a trend entity's steps are permutations of their ranges, in order, across instances", async () => {
        const key = uniqueKey('trend');
        const step = 200;
        const secret = await register(instances[2].url, {
          key,
          mode: 'trend',
          step,
          maxPoolSize: 2000,
          maxSizePerSecond: 0,
          maxSizePerTimes: 200,
        });
        const ids: bigint[] = [];
        for (let i = 0; ids.length < 20 * step; i++) {
          const res = await takeIds(instances[i % INSTANCES].url, key, secret, 40);
          if (res.status === 200) ids.push(...res.body.ids.map(BigInt));
        }
        for (let s = 0; s < 20; s++) {
          const part = ids.slice(s * step, (s + 1) * step);
          const first = (part[0] / BigInt(step)) * BigInt(step);
          const sorted = [...part].sort((a, b) => (a < b ? -1 : 1));
          expect(sorted).toEqual(Array.from({ length: step }, (_, i) => first + BigInt(i)));
          expect(part).not.toEqual(sorted);
          if (s > 0) expect(first).toBeGreaterThan(ids[s * step - 1]);
        }
        const shown = await call(`${instances[0].url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
        expect(shown.body.mode).toBe('trend');
      });
    },
  );
}
