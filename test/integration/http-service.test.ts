import { afterAll, beforeAll, expect, it } from 'vitest';
import { STORE_SETUPS, type StoreSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, registerNew, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';
import { waitFor } from '../support/wait';

async function poolSize(base: string, key: string): Promise<number> {
  const res = await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN });
  return res.body.pool.size;
}

function expectUnique(ids: string[]) {
  expect(new Set(ids).size).toBe(ids.length);
}

function expectIncreasing(ids: string[]) {
  for (let i = 1; i < ids.length; i++) {
    if (!(BigInt(ids[i]) > BigInt(ids[i - 1]))) throw new Error(`not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
  }
}

for (const { needs, create, name } of STORE_SETUPS) {
  describeWithServices(`HTTP service on ${name}`, needs, () => {
    let setup: StoreSetup;
    let instance: Instance;
    let base: string;

    beforeAll(async () => {
      setup = await create();
      instance = await startInstance(setup.env);
      base = instance.url;
    });

    afterAll(async () => {
      await instance?.stop();
      await setup?.cleanup();
    });

    it('registers an entity, fills its pool and hands out increasing ids in singles and batches', async () => {
      const key = uniqueKey('orders');
      const res = await call(`${base}/admin/apps`, {
        token: ADMIN_TOKEN,
        body: { key, step: 100, maxPoolSize: 2000, maxSizePerSecond: 0, startOffset: '1000' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        key,
        mode: 'monotonic',
        step: 100,
        maxPoolSize: 2000,
        minSizePercent: 80,
        maxSizePerTimes: 1000,
        startOffset: '1000',
      });
      expect(res.body.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const secret = res.body.secret;
      expect(res.body.pool).toMatchObject({ target: 1000, max: 2000, lowWatermark: 800 }); // idle: one floor, max(step, maxSizePerTimes)
      await waitFor(async () => (await poolSize(base, key)) >= 1000, { message: 'pool filled', timeoutMs: 10_000 });

      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const one = await takeIds(base, key, secret, 1);
        expect(one.status).toBe(200);
        expect(one.body.ids).toHaveLength(1);
        ids.push(...one.body.ids);
        const batch = await takeIds(base, key, secret, 250);
        expect(batch.status).toBe(200);
        expect(batch.body.ids).toHaveLength(250);
        ids.push(...batch.body.ids);
      }
      const query = await call(`${base}/apps/${key}/ids?count=3`, { method: 'POST', token: secret });
      expect(query.status).toBe(200);
      ids.push(...query.body.ids);
      expect(ids[0]).toBe('1000');
      expectUnique(ids);
      expectIncreasing(ids);

      const shown = await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN });
      expect(shown.status).toBe(200);
      expect(shown.body.secret).toBeUndefined();
      expect(shown.body.pool).toMatchObject({ max: 2000, lowWatermark: 1600 });
      expect(BigInt(shown.body.currentOffset)).toBeGreaterThan(BigInt(ids[ids.length - 1]));
      const listed = await call(`${base}/admin/apps`, { token: ADMIN_TOKEN });
      expect(listed.body.apps.map((a: { key: string }) => a.key)).toContain(key);
    });

    it('trend entities hand out each step as a shuffled permutation, steps in order', async () => {
      const key = uniqueKey('users');
      const secret = await register(base, { key, mode: 'trend', step: 100, maxPoolSize: 1000, maxSizePerSecond: 0 });
      await waitFor(async () => (await poolSize(base, key)) >= 800, { message: 'pool filled', timeoutMs: 10_000 });
      const ids: bigint[] = [];
      for (let i = 0; i < 8; i++) ids.push(...(await takeIds(base, key, secret, 100)).body.ids.map(BigInt));
      for (let s = 0; s < 8; s++) {
        const part = ids.slice(s * 100, s * 100 + 100);
        const sorted = [...part].sort((a, b) => (a < b ? -1 : 1));
        expect(sorted).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(s * 100 + i)));
        expect(part).not.toEqual(sorted); // 1 in 100! that a shuffle leaves it sorted
      }
    });

    it('changes, rotates the secret of and retires an entity', async () => {
      const { key, secret } = await registerNew(base, 'pay', { step: 10, maxPoolSize: 100, maxSizePerTimes: 100 });
      const patched = await call(`${base}/admin/apps/${key}`, {
        method: 'PATCH',
        token: ADMIN_TOKEN,
        body: { name: 'Payments', maxSizePerTimes: 50 },
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ name: 'Payments', maxSizePerTimes: 50 });
      expect((await takeIds(base, key, secret, 51)).status).toBe(400);

      const rotated = await call(`${base}/admin/apps/${key}/secret`, { method: 'POST', token: ADMIN_TOKEN });
      expect(rotated.status).toBe(200);
      expect((await takeIds(base, key, secret, 1)).status).toBe(401);
      await waitFor(async () => (await poolSize(base, key)) > 0, { message: 'pool filled', timeoutMs: 10_000 });
      const taken = await takeIds(base, key, rotated.body.secret, 1);
      expect(taken.status).toBe(200);

      expect((await call(`${base}/admin/apps/${key}`, { method: 'DELETE', token: ADMIN_TOKEN })).status).toBe(204);
      expect((await takeIds(base, key, rotated.body.secret, 1)).status).toBe(401);
      expect((await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN })).status).toBe(404);
      const again = await call(`${base}/admin/apps`, { token: ADMIN_TOKEN, body: { key } });
      expect(again.status).toBe(409); // retired keys are never reused, so their ids never repeat
    });

    it('rejects 51 kinds of bad input with the right 4xx JSON error and changes nothing', async () => {
      const key = uniqueKey('bad');
      const other = uniqueKey('other');
      const secret = await register(base, { key, step: 100, maxPoolSize: 1000, maxSizePerSecond: 0 });
      const otherSecret = await register(base, {
        key: other,
        mode: 'trend',
        step: 100,
        maxPoolSize: 1000,
        maxSizePerSecond: 0,
      });
      await waitFor(async () => (await poolSize(base, key)) === 1000 && (await poolSize(base, other)) === 1000, {
        message: 'pools filled',
        timeoutMs: 10_000,
      });
      await new Promise((r) => setTimeout(r, 300)); // let the last refill tick settle

      const beforeSql = await setup.applicationRows();
      const beforeRedis = await setup.redisState([key, other]);
      const ids = `${base}/apps/${key}/ids`;
      const admin = { token: ADMIN_TOKEN };
      const cases: [string, () => Promise<{ status: number; body: any; headers: Headers }>, number, string][] = [
        ['count 0', () => call(ids, { token: secret, body: { count: 0 } }), 400, 'invalid_request'],
        ['negative count', () => call(ids, { token: secret, body: { count: -5 } }), 400, 'invalid_request'],
        ['fractional count', () => call(ids, { token: secret, body: { count: 1.5 } }), 400, 'invalid_request'],
        ['count as string', () => call(ids, { token: secret, body: { count: '10' } }), 400, 'invalid_request'],
        ['huge count', () => call(ids, { token: secret, body: { count: 1e15 } }), 400, 'invalid_request'],
        [
          'count above maxSizePerTimes',
          () => call(ids, { token: secret, body: { count: 1001 } }),
          400,
          'invalid_request',
        ],
        ['null count', () => call(ids, { token: secret, body: { count: null } }), 400, 'invalid_request'],
        [
          'non-numeric ?count',
          () => call(`${ids}?count=abc`, { method: 'POST', token: secret }),
          400,
          'invalid_request',
        ],
        ['?count=0', () => call(`${ids}?count=0`, { method: 'POST', token: secret }), 400, 'invalid_request'],
        ['?count=-1', () => call(`${ids}?count=-1`, { method: 'POST', token: secret }), 400, 'invalid_request'],
        ['bad JSON', () => call(ids, { token: secret, rawBody: '{"count": ' }), 400, 'invalid_request'],
        // curl's -d without -H 'Content-Type: application/json' sends a form: refused, never read as no body.
        [
          'JSON sent as a form',
          () =>
            call(ids, {
              token: secret,
              rawBody: '{"count":5}',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
            }),
          415,
          'unsupported_media_type',
        ],
        [
          'JSON sent as text/plain',
          () => call(ids, { token: secret, rawBody: '{"count":5}', headers: { 'content-type': 'text/plain' } }),
          415,
          'unsupported_media_type',
        ],
        ['JSON array body', () => call(ids, { token: secret, body: [1, 2] }), 400, 'invalid_request'],
        ['JSON string body', () => call(ids, { token: secret, rawBody: '"hello"' }), 400, 'invalid_request'],
        [
          'unknown body field',
          () => call(ids, { token: secret, body: { count: 1, extra: true } }),
          400,
          'invalid_request',
        ],
        [
          'oversized body',
          () => call(ids, { token: secret, rawBody: JSON.stringify({ count: 1, pad: 'x'.repeat(40_000) }) }),
          413,
          'payload_too_large',
        ],
        [
          'unknown key',
          () => call(`${base}/apps/${uniqueKey('nobody')}/ids`, { token: secret, body: { count: 1 } }),
          401,
          'unauthorized',
        ],
        [
          'key with illegal characters',
          () => call(`${base}/apps/bad$key!/ids`, { token: secret, body: { count: 1 } }),
          400,
          'invalid_request',
        ],
        [
          'key longer than 64',
          () => call(`${base}/apps/${'k'.repeat(65)}/ids`, { token: secret, body: { count: 1 } }),
          400,
          'invalid_request',
        ],
        ['missing secret', () => call(ids, { body: { count: 1 } }), 401, 'unauthorized'],
        ['wrong secret', () => call(ids, { token: 'not-the-secret', body: { count: 1 } }), 401, 'unauthorized'],
        ["another entity's secret", () => call(ids, { token: otherSecret, body: { count: 1 } }), 401, 'unauthorized'],
        [
          'admin token as entity secret',
          () => call(ids, { token: ADMIN_TOKEN, body: { count: 1 } }),
          401,
          'unauthorized',
        ],
        [
          'Basic instead of Bearer',
          () => call(ids, { headers: { authorization: 'Basic dXNlcjpwYXNz' }, body: { count: 1 } }),
          401,
          'unauthorized',
        ],
        ['decode on a segment entity', () => call(`${ids}/12345`, { token: secret }), 400, 'invalid_request'],
        [
          'admin route without token',
          () => call(`${base}/admin/apps`, { body: { key: uniqueKey('x') } }),
          401,
          'unauthorized',
        ],
        [
          'admin route with wrong token',
          () => call(`${base}/admin/apps`, { token: 'wrong-admin-token-0000', body: { key: uniqueKey('x') } }),
          401,
          'unauthorized',
        ],
        ['admin route with an entity secret', () => call(`${base}/admin/apps`, { token: secret }), 401, 'unauthorized'],
        [
          'register: illegal key',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: 'no spaces' } }),
          400,
          'invalid_request',
        ],
        [
          'register: empty key',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: '' } }),
          400,
          'invalid_request',
        ],
        [
          'register: missing key',
          () => call(`${base}/admin/apps`, { ...admin, body: { step: 10 } }),
          400,
          'invalid_request',
        ],
        ['register: duplicate key', () => call(`${base}/admin/apps`, { ...admin, body: { key } }), 409, 'conflict'],
        [
          'register: step 0',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), step: 0 } }),
          400,
          'invalid_request',
        ],
        [
          'register: fractional step',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), step: 10.5 } }),
          400,
          'invalid_request',
        ],
        [
          'register: step as string',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), step: '100' } }),
          400,
          'invalid_request',
        ],
        [
          'register: minSizePercent 100',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), minSizePercent: 100 } }),
          400,
          'invalid_request',
        ],
        [
          'register: pool too small for a step',
          () =>
            call(`${base}/admin/apps`, {
              ...admin,
              body: { key: uniqueKey('x'), step: 1000, maxPoolSize: 4000, minSizePercent: 80 },
            }),
          400,
          'invalid_request',
        ],
        [
          'register: unknown mode',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), mode: 'random' } }),
          400,
          'invalid_request',
        ],
        [
          'register: unknown field',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), colour: 'red' } }),
          400,
          'invalid_request',
        ],
        [
          'register: limit below batch size',
          () =>
            call(`${base}/admin/apps`, {
              ...admin,
              body: { key: uniqueKey('x'), maxSizePerSecond: 10, maxSizePerTimes: 100 },
            }),
          400,
          'invalid_request',
        ],
        [
          'register: negative startOffset',
          () => call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), startOffset: -1 } }),
          400,
          'invalid_request',
        ],
        [
          'register: startOffset beyond 2^62',
          () =>
            call(`${base}/admin/apps`, { ...admin, body: { key: uniqueKey('x'), startOffset: '9223372036854775807' } }),
          400,
          'invalid_request',
        ],
        [
          'register: not JSON',
          () => call(`${base}/admin/apps`, { ...admin, rawBody: 'key=x', headers: { 'content-type': 'text/plain' } }),
          415,
          'unsupported_media_type',
        ],
        [
          'patch: unknown entity',
          () => call(`${base}/admin/apps/${uniqueKey('nobody')}`, { ...admin, method: 'PATCH', body: { name: 'x' } }),
          404,
          'not_found',
        ],
        [
          'patch: immutable field',
          () => call(`${base}/admin/apps/${key}`, { ...admin, method: 'PATCH', body: { mode: 'trend' } }),
          400,
          'invalid_request',
        ],
        [
          'patch: breaks the pool rule',
          () => call(`${base}/admin/apps/${key}`, { ...admin, method: 'PATCH', body: { step: 900 } }),
          400,
          'invalid_request',
        ],
        [
          'delete: unknown entity',
          () => call(`${base}/admin/apps/${uniqueKey('nobody')}`, { ...admin, method: 'DELETE' }),
          404,
          'not_found',
        ],
        ['show: illegal key', () => call(`${base}/admin/apps/bad$key`, admin), 400, 'invalid_request'],
        [
          'rotate: unknown entity',
          () => call(`${base}/admin/apps/${uniqueKey('nobody')}/secret`, { ...admin, method: 'POST' }),
          404,
          'not_found',
        ],
        [
          'raise: below the line',
          () => call(`${base}/admin/apps/${key}/raise`, { ...admin, body: { firstId: '0' } }),
          409,
          'conflict',
        ],
        ['unknown route', () => call(`${base}/no/such/route`), 404, 'not_found'],
      ];
      expect(cases.length).toBeGreaterThanOrEqual(30);
      for (const [name, send, status, code] of cases) {
        const res = await send();
        expect({ name, status: res.status, code: res.body?.error?.code }).toEqual({ name, status, code });
        expect(typeof res.body.error.message, name).toBe('string');
      }
      expect(await setup.applicationRows()).toEqual(beforeSql);
      expect(await setup.redisState([key, other])).toEqual(beforeRedis);
    });

    it('answers 429 with Retry-After past max_size_per_second', async () => {
      const { key, secret } = await registerNew(base, 'limited', {
        step: 100,
        maxPoolSize: 2000,
        maxSizePerSecond: 1000,
        maxSizePerTimes: 1000,
      });
      await waitFor(async () => (await poolSize(base, key)) >= 1000, { message: 'pool filled', timeoutMs: 10_000 });
      let limited: Awaited<ReturnType<typeof takeIds>> | undefined;
      for (let attempt = 0; attempt < 3 && !limited; attempt++) {
        const first = await takeIds(base, key, secret, 1000);
        expect([200, 429]).toContain(first.status);
        const second = await takeIds(base, key, secret, 1);
        if (second.status === 429) limited = second;
        else await new Promise((r) => setTimeout(r, 1000));
      }
      expect(limited?.body.error?.code).toBe('rate_limited');
      expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    });

    it('answers 503 pool_exhausted with Retry-After while the database stalls, and recovers', async () => {
      const { key, secret } = await registerNew(base, 'dry', { step: 100, maxPoolSize: 500, maxSizePerTimes: 500 });
      await waitFor(async () => (await poolSize(base, key)) === 500, { message: 'pool filled', timeoutMs: 10_000 });
      const release = await setup.stallDatabase(key);
      try {
        expect((await takeIds(base, key, secret, 500)).status).toBe(200);
        const started = Date.now();
        const dry = await takeIds(base, key, secret, 1);
        expect(dry.status).toBe(503);
        expect(dry.body.error?.code).toBe('pool_exhausted');
        expect(Number(dry.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(Date.now() - started).toBeLessThan(3000); // never a hang
      } finally {
        await release();
      }
      await waitFor(async () => (await takeIds(base, key, secret, 1)).status === 200, {
        message: 'refilled after the stall',
        timeoutMs: 15_000,
      });
      // The alarm is written at once, but reaches this process through a pipe:
      // when the refill comes back at the first check it may not have arrived yet.
      await waitFor(async () => instance.output().includes('pool_exhausted'), {
        message: 'the pool_exhausted alarm in the log',
        timeoutMs: 5000,
      });
    });

    it('never repeats an id across kill -9 and restart in the middle of refills and pops', async () => {
      const { key, secret } = await registerNew(base, 'crash', { step: 50, maxPoolSize: 500, maxSizePerTimes: 100 });
      const seen: string[] = [];
      for (let round = 0; round < 3; round++) {
        const url = instance.url;
        let stop = false;
        const clients = Array.from({ length: 8 }, async (_, c) => {
          while (!stop) {
            const res = await takeIds(url, key, secret, c % 2 ? 1 : 37).catch(() => undefined);
            if (!res) return; // the instance died under us
            if (res.status === 200) seen.push(...res.body.ids);
            else if (res.status !== 503) throw new Error(`unexpected ${res.status} ${JSON.stringify(res.body)}`);
          }
        });
        await new Promise((r) => setTimeout(r, 700));
        await instance.kill9();
        stop = true;
        await Promise.all(clients);
        instance = await startInstance(setup.env);
        base = instance.url;
      }
      for (let i = 0; i < 20; i++) {
        const res = await takeIds(base, key, secret, 100);
        if (res.status === 200) seen.push(...res.body.ids);
      }
      expect(seen.length).toBeGreaterThan(1000);
      expectUnique(seen);
      expect(BigInt(seen.reduce((a, b) => (BigInt(a) > BigInt(b) ? a : b)))).toBeLessThan(
        await setup.currentOffset(key),
      );
    });
  });
}
