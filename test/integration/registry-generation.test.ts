import Redis from 'ioredis';
import { expect, it } from 'vitest';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { commandCalls } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { sleep } from '../support/wait';
import { suiteInstances } from '../support/suite-instances';

/** GET commands the Redis server has run so far. */
const gets = async (redis: Redis) => (await commandCalls(redis, 'get')).get;

describeWithServices(
  'a change made through one instance reaches another (MariaDB + Redis, two processes)',
  { mysql: true, redis: true },
  () => {
    const two = suiteInstances((base) => ({ a: base, b: base }), { privateRedis: true });

    it('an idle instance reads the generation once a second, and its first request after a rotation elsewhere already refuses the old secret', async () => {
      const key = 'rotated';
      const first = await register(two.a.url, { key, maxSizePerSecond: 0 });
      expect((await takeIds(two.b.url, key, first)).status).toBe(200);

      // Past 10 s without a request both instances are idle: each reads the
      // generation with its full refresh only (twice a second), and its
      // sweep one pool's counter each second: ~12 GETs in 2 s, not the 40+
      // of two instances reading every 100 ms.
      await sleep(11_000);
      const before = await gets(two.direct);
      await sleep(2000);
      expect((await gets(two.direct)) - before).toBeLessThanOrEqual(20);

      const rotated = await call(`${two.a.url}/admin/apps/${key}/secret`, { method: 'POST', token: ADMIN_TOKEN });
      expect(rotated.status).toBe(200);
      // At once, with no wait for B's tick: B's first request reads the generation first.
      expect((await takeIds(two.b.url, key, first)).status).toBe(401);
      expect((await takeIds(two.b.url, key, rotated.body.secret)).status).toBe(200);

      // Serving now, B reads it every 100 ms: a retirement is seen within a few ticks (a loaded CI machine stretched
      // one tick and its refresh past 300 ms). Meanwhile a take finds the pool A dropped (503) or the entity's row
      // gone (404), never an id.
      expect((await call(`${two.a.url}/admin/apps/${key}`, { method: 'DELETE', token: ADMIN_TOKEN })).status).toBe(204);
      const retiredAt = Date.now();
      let status = 0;
      while (status !== 401 && Date.now() - retiredAt < 3000) {
        status = (await takeIds(two.b.url, key, rotated.body.secret)).status;
        expect([401, 404, 503]).toContain(status);
        if (status !== 401) await sleep(50);
      }
      expect(status).toBe(401);
    }, 30_000);
  },
);
