import type Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { call, register } from '../support/http';
import { type PrivateDeployment, privateDeployment } from '../support/private-deployment';
import type { Instance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';

const MB = 1024 * 1024;

/** Bytes of the answers Redis holds for keys matching `pattern`, counted as the service counts them (key + value + 100). */
async function answerBytes(redis: Redis, pattern: string): Promise<{ count: number; bytes: number }> {
  let count = 0;
  let bytes = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const length = await redis.strlen(key);
      if (length === 0) continue;
      count++;
      bytes += key.length + length + 100;
    }
  } while (cursor !== '0');
  return { count, bytes };
}

describeWithServices(
  'Idempotency-Key answers in Redis are bounded in bytes, per entity and in total (a service process, noeviction)',
  { mysql: true },
  () => {
    let deployment: PrivateDeployment | undefined;
    let direct: Redis;
    let instance: Instance;

    beforeAll(async () => {
      deployment = await privateDeployment(['--maxmemory-policy', 'noeviction']);
      direct = deployment.direct;
      // 1 MB in total, a quarter of it per entity.
      instance = await deployment.start({ IDPOOL_IDEMPOTENCY_MAX_MB: '1', IDPOOL_REQUEST_LOG: 'false' });
    }, 60_000);

    afterAll(async () => {
      await deployment?.stop();
    });

    /**
     * A take of 1,000 as a client makes it: asked again with the same key after a `503` with
     * `Retry-After` (10 s at most), as a take of a whole batch can outrun the refills on a loaded machine.
     */
    const take = async (key: string, secret: string, requestKey: string) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const res = await call(`${instance.url}/apps/${key}/ids`, {
          token: secret,
          body: { count: 1000 },
          headers: { 'idempotency-key': requestKey },
        });
        if (res.status !== 503 || !res.headers.get('retry-after') || Date.now() > deadline) return res;
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    it('a busy entity keeps its newest answers within a quarter; past the total, answers are given but not stored', async () => {
      // Trend entities shuffle each step: an answer of 1,000 ids is ~7 KB, not one compact run.
      const entity = { mode: 'trend', step: 1000, maxSizePerTimes: 1000, maxSizePerSecond: 0, maxPoolSize: 200_000 };
      const busy = uniqueKey('busy');
      const busySecret = await register(instance.url, { key: busy, ...entity });
      for (let i = 0; i < 80; i++) expect((await take(busy, busySecret, `r${i}`)).status).toBe(200);
      const held = await answerBytes(direct, `*{${busy}}:idem:answer:*`);
      process.stderr.write(
        `idempotency in Redis: busy entity holds ${held.count} answers, ${held.bytes} bytes (cap ${MB / 4})\n`,
      );
      expect(held.bytes).toBeLessThanOrEqual(MB / 4);
      expect(held.count).toBeGreaterThan(10);
      expect(held.count).toBeLessThan(80);
      const newest = await take(busy, busySecret, 'r79');
      expect(newest.headers.get('idempotent-replayed')).toBe('true');

      // More entities, until the total is reached: every request still answered.
      let notStored = 0;
      for (let e = 0; e < 5; e++) {
        const key = uniqueKey(`other${e}`);
        const secret = await register(instance.url, { key, ...entity });
        for (let i = 0; i < 30; i++) {
          const first = await take(key, secret, `r${i}`);
          expect(first.status).toBe(200);
          expect(first.body.ids).toHaveLength(1000);
          const again = await take(key, secret, `r${i}`);
          expect(again.status).toBe(200);
          if (again.headers.get('idempotent-replayed') !== 'true') notStored++;
        }
      }
      const all = await answerBytes(direct, '*:idem:answer:*');
      process.stderr.write(
        `idempotency in Redis: all entities hold ${all.count} answers, ${all.bytes} bytes (total cap ${MB}); ${notStored} answers not stored\n`,
      );
      expect(all.bytes).toBeLessThanOrEqual(MB);
      expect(notStored).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 1500)); // warnings are flushed at the end of their turn; give the pipe a moment
      expect(instance.output()).toMatch(/"level":40[^\n]*Idempotency-Key answers are at their byte bound/);
    }, 120_000);
  },
);
