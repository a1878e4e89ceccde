import { afterAll, beforeAll, expect, it } from 'vitest';
import { STORE_SETUPS, type StoreSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, registerNew, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';

for (const { needs, create, name } of STORE_SETUPS) {
  describeWithServices(`snowflake entities on ${name}`, needs, () => {
    let setup: StoreSetup;
    let instances: Instance[] = [];

    beforeAll(async () => {
      setup = await create();
      instances = [await startInstance(setup.env)];
      // With Redis the limit is shared: a second instance draws from the same budget.
      if (needs.redis) instances.push(await startInstance(setup.env));
    });

    afterAll(async () => {
      await Promise.all(instances.map((i) => i.stop()));
      await setup?.cleanup();
    });

    it('refuses the pool fields with a 400 naming the field, on register and on update', async () => {
      const base = instances[0].url;
      for (const [field, value] of [
        ['startOffset', '1000'],
        ['step', 100],
        ['maxPoolSize', 10_000],
        ['minSizePercent', 50],
        ['interval', 500],
      ] as const) {
        const key = uniqueKey('sf');
        const res = await call(`${base}/admin/apps`, {
          token: ADMIN_TOKEN,
          body: { key, mode: 'snowflake', [field]: value },
        });
        expect(res.status, field).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
        expect(res.body.error.message).toMatch(new RegExp(`^${field}: not used by snowflake entities`));
        expect((await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN })).status).toBe(404);
      }
      const key = uniqueKey('sf');
      await register(base, { key, mode: 'snowflake', maxSizePerTimes: 10, maxSizePerSecond: 100 });
      const patch = await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN, method: 'PATCH', body: { step: 5 } });
      expect(patch.status).toBe(400);
      expect(patch.body.error.message).toMatch(/^step: /);
      expect(
        (
          await call(`${base}/admin/apps/${key}`, {
            token: ADMIN_TOKEN,
            method: 'PATCH',
            body: { maxSizePerSecond: 200 },
          })
        ).status,
      ).toBe(200);
    });

    it('enforces maxSizePerSecond: 429 with Retry-After once a second is spent', async () => {
      const { key, secret } = await registerNew(instances[0].url, 'sf', {
        mode: 'snowflake',
        maxSizePerTimes: 100,
        maxSizePerSecond: 100,
      });
      // 100 ids a second: five requests of 100 within ~a second cannot all pass, whichever instance answers.
      const results = [];
      for (let i = 0; i < 5; i++) results.push(await takeIds(instances[i % instances.length].url, key, secret, 100));
      const ok = results.filter((r) => r.status === 200);
      const limited = results.filter((r) => r.status === 429);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      expect(limited.length).toBeGreaterThanOrEqual(2);
      for (const r of limited) {
        expect(r.body.error?.code).toBe('rate_limited');
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      await new Promise((r) => setTimeout(r, 1100));
      expect((await takeIds(instances[0].url, key, secret, 100)).status).toBe(200);
    });
  });
}
