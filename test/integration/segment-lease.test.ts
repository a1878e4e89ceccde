import mysql from 'mysql2/promise';
import { expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { type PrivateMariadb, startPrivateMariadb } from '../support/mariadb';
import { call, parseMetrics, register, registerNew, takeIds } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';
import { GeneratorClosedError, InvalidOptionError, SegmentsNotReadyError, createIdGenerator } from '../../src/library';
import { IdpoolConflictError, IdpoolUnauthorizedError } from '../../src/client';
import { suiteInstances } from '../support/suite-instances';

const lease = (base: string, key: string, secret: string, body?: unknown, query = '') =>
  call(`${base}/apps/${key}/segments${query}`, { method: 'POST', token: secret, body });

/** Every id of a native lease answer, from first to last by delta. */
function idsOfLease(seg: { first: string; last: string; delta: number }): bigint[] {
  const out: bigint[] = [];
  for (let id = BigInt(seg.first); id <= BigInt(seg.last); id += BigInt(seg.delta)) out.push(id);
  return out;
}

describeWithServices(
  'POST /apps/:key/segments: leases (MariaDB + Redis, real processes)',
  { mysql: true, redis: true },
  () => {
    const main = suiteInstances((base) => ({ instance: base }));
    const strided = suiteInstances((base) => ({
      instance: { ...base, IDPOOL_CLUSTER_COUNT: '3', IDPOOL_CLUSTER_INDEX: '2' },
    }));

    const offsetOf = async (key: string, url = main.schema.url) => {
      const conn = await mysql.createConnection(url);
      try {
        const [rows] = await conn.query(
          'SELECT CAST(current_offset AS CHAR) AS c FROM application WHERE entity_key = ?',
          [key],
        );
        return BigInt((rows as { c: string }[])[0].c);
      } finally {
        await conn.end();
      }
    };

    /** The offset once the pool's refills have stopped moving it (300 ms unchanged). */
    const settledOffset = async (key: string) => {
      let last = await offsetOf(key);
      for (let i = 0; i < 50; i++) {
        await new Promise((r) => setTimeout(r, 300));
        const now = await offsetOf(key);
        if (now === last) return now;
        last = now;
      }
      throw new Error(`offset of ${key} never settled`);
    };

    it('leases disjoint segments of a trend entity, beside the pool its takes use; no id twice', async () => {
      const { key, secret } = await registerNew(main.instance.url, 'lease', {
        mode: 'trend',
        step: 500,
        startOffset: 7,
      });
      const first = await lease(main.instance.url, key, secret);
      expect(first.status).toBe(200);
      expect(first.headers.get('content-type')).toBe('application/json; charset=utf-8');
      // The entity's step by default, from where the number line stands (the pool may have reserved before).
      expect(first.body).toMatchObject({ count: 500, delta: 1, remainder: 0 });
      expect(BigInt(first.body.last) - BigInt(first.body.first)).toBe(499n);
      expect(BigInt(first.body.first)).toBeGreaterThanOrEqual(7n);

      const seen = new Set<bigint>();
      const add = (id: bigint) => {
        if (seen.has(id)) throw new Error(`id ${id} twice`);
        seen.add(id);
      };
      idsOfLease(first.body).forEach(add);
      for (let i = 0; i < 20; i++) {
        const [sized, taken] = await Promise.all([
          lease(main.instance.url, key, secret, { size: 1234 }),
          takeIds(main.instance.url, key, secret, 100),
        ]);
        expect(sized.status).toBe(200);
        expect(sized.body.count).toBe(1234);
        idsOfLease(sized.body).forEach(add);
        expect(taken.status).toBe(200);
        taken.body.ids.map(BigInt).forEach(add);
      }
      const byQuery = await lease(main.instance.url, key, secret, undefined, '?size=3');
      expect(byQuery.body.count).toBe(3);
      idsOfLease(byQuery.body).forEach(add);
      expect(seen.size).toBe(500 + 20 * 1234 + 20 * 100 + 3);
      // The database has reserved past every leased id.
      expect(await offsetOf(key)).toBeGreaterThan(BigInt(byQuery.body.last));
    });

    it('createIdGenerator({ service }) hands out leased ids in-process, beside native takes: no id twice; monotonic refused', async () => {
      const key = uniqueKey('libsvc');
      const secret = await register(main.instance.url, { key, mode: 'trend', step: 1000, maxSizePerSecond: 0 });
      const generators = await Promise.all([
        createIdGenerator({ service: { url: main.instance.url, secrets: { [key]: secret } }, ids: 'number' }),
        createIdGenerator({ service: { url: [main.instance.url], secrets: { [key]: secret } }, ids: 'number' }),
      ]);
      await Promise.all(generators.map((g) => g.open(key)));
      const seen = new Set<string>();
      const add = (id: string) => {
        if (seen.has(id)) throw new Error(`id ${id} twice`);
        seen.add(id);
      };
      for (let round = 0; round < 20; round++) {
        for (const g of generators) for (const id of await g.take(key, 2500)) add(String(id));
        const taken = await takeIds(main.instance.url, key, secret, 100);
        if (taken.status === 200) taken.body.ids.forEach(add);
        // Synchronous ids between the awaits: the leased buffer's hot path.
        for (let i = 0; i < 1000; i++) {
          try {
            add(String(generators[0].next(key)));
          } catch {
            break;
          }
        }
      }
      expect(seen.size).toBeGreaterThanOrEqual(20 * 5000);
      // An entity it holds no secret for, and a closed generator: numbers() rejects as take() does, never throws.
      await expect(generators[0].numbers('not-configured', 1)).rejects.toBeInstanceOf(InvalidOptionError);
      await Promise.all(generators.map((g) => g.close()));
      await expect(generators[0].numbers(key, 1)).rejects.toBeInstanceOf(GeneratorClosedError);

      const mono = uniqueKey('libmono');
      const monoSecret = await register(main.instance.url, { key: mono, mode: 'monotonic', maxSizePerSecond: 0 });
      const refused = await createIdGenerator({ service: { url: main.instance.url, secrets: { [mono]: monoSecret } } });
      await expect(refused.open(mono)).rejects.toBeInstanceOf(IdpoolConflictError);
      await refused.close();
      const wrong = await createIdGenerator({ service: { url: main.instance.url, secrets: { [key]: 'not-it' } } });
      await expect(wrong.open(key)).rejects.toBeInstanceOf(IdpoolUnauthorizedError);
      await wrong.close();
      // open() that gets no segment within waitMs names its entity as next() does (it named none).
      const unreachable = await createIdGenerator({
        service: { url: 'http://127.0.0.1:9', secrets: { [key]: secret } },
        waitMs: 200,
      });
      const notReady = await unreachable.open(key).catch((err: unknown) => err);
      expect(notReady).toBeInstanceOf(SegmentsNotReadyError);
      expect((notReady as SegmentsNotReadyError).entityKey).toBe(key);
      await unreachable.close();
    });

    it('a monotonic entity refuses with 409 saying why; snowflake too; nothing reserved', async () => {
      const key = uniqueKey('mono');
      const secret = await register(main.instance.url, { key, mode: 'monotonic', maxSizePerSecond: 0 });
      const before = await settledOffset(key);
      const res = await lease(main.instance.url, key, secret);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('conflict');
      expect(res.body.error.message).toContain('monotonic');
      expect(res.body.error.message).toContain('one global order');
      expect(await offsetOf(key)).toBe(before);

      const flake = uniqueKey('flake');
      const flakeSecret = await register(main.instance.url, { key: flake, mode: 'snowflake' });
      const refused = await lease(main.instance.url, flake, flakeSecret);
      expect(refused.status).toBe(409);
      expect(refused.body.error.message).toContain('snowflake');
    });

    it('bad input is a 400 that reserves nothing; unknown key and wrong secret the same 401', async () => {
      const key = uniqueKey('bad');
      const secret = await register(main.instance.url, { key, mode: 'trend', maxSizePerSecond: 0 });
      await lease(main.instance.url, key, secret, { size: 1 });
      // The pool's first refill reserves too: wait until it is done.
      const before = await settledOffset(key);
      const cases: [unknown, string][] = [
        [{ size: 0 }, ''],
        [{ size: -5 }, ''],
        [{ size: 1.5 }, ''],
        [{ size: '10' }, ''],
        [{ size: 10_000_001 }, ''],
        [{ count: 10 }, ''],
        [[1], ''],
        [undefined, '?size=abc'],
        [undefined, '?size=0'],
      ];
      for (const [body, query] of cases) {
        const res = await lease(main.instance.url, key, secret, body, query);
        expect(res.status, JSON.stringify(body) + query).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
      }
      const broken = await call(`${main.instance.url}/apps/${key}/segments`, { token: secret, rawBody: '{"size":' });
      expect(broken.status).toBe(400);
      expect(await offsetOf(key)).toBe(before);

      const wrong = await lease(main.instance.url, key, 'not-the-secret');
      const unknown = await lease(main.instance.url, uniqueKey('nobody'), secret);
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(unknown.body).toEqual(wrong.body);
      expect(await offsetOf(key)).toBe(before);
    });

    it('counts against maxSizePerSecond with the takes (429 + Retry-After), and shows in the metrics', async () => {
      const key = uniqueKey('limited');
      const secret = await register(main.instance.url, { key, mode: 'trend', step: 100, maxSizePerSecond: 1000 });
      const tooBig = await lease(main.instance.url, key, secret, { size: 1001 });
      expect(tooBig.status).toBe(400);
      expect(tooBig.body.error.message).toContain('maxSizePerSecond');
      let limited: Awaited<ReturnType<typeof lease>> | undefined;
      for (let i = 0; i < 30 && !limited; i++) {
        const res = await lease(main.instance.url, key, secret, { size: 400 });
        if (res.status === 429) limited = res;
        else expect(res.status).toBe(200);
      }
      expect(limited?.body.error.code).toBe('rate_limited');
      expect(limited?.headers.get('retry-after')).toMatch(/^\d+$/);

      const metrics = parseMetrics(await (await fetch(`${main.instance.url}/metrics`)).text());
      expect(metrics.get(`idpool_segments_leased_total{entity="${key}"}`)).toBeGreaterThanOrEqual(2);
      expect(metrics.get(`idpool_ids_leased_total{entity="${key}"}`)).toBeGreaterThanOrEqual(800);
      expect(metrics.get(`idpool_rate_limited_total{entity="${key}"}`)).toBeGreaterThanOrEqual(1);
    });

    it('a deployment stride shows as delta and remainder: ids n·3 + 2', async () => {
      const key = uniqueKey('stride');
      const secret = await register(strided.instance.url, { key, mode: 'trend', step: 10, maxSizePerSecond: 0 });
      const res = await lease(strided.instance.url, key, secret, { size: 10 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ count: 10, delta: 3, remainder: 2 });
      const ids = idsOfLease(res.body);
      expect(ids).toHaveLength(10);
      for (const id of ids) expect(id % 3n).toBe(2n);

      // The entity's own spacing (Tinyid's delta/remainder) composes with the stride: (n·3 + 2)·4 + 1.
      const spaced = uniqueKey('spaced');
      const spacedSecret = await register(strided.instance.url, {
        key: spaced,
        mode: 'trend',
        step: 10,
        maxSizePerSecond: 0,
        delta: 4,
        remainder: 1,
      });
      const spacedRes = await lease(strided.instance.url, spaced, spacedSecret, { size: 5 });
      expect(spacedRes.body).toMatchObject({ count: 5, delta: 12, remainder: 9 });
      const spacedIds = idsOfLease(spacedRes.body);
      expect(spacedIds).toHaveLength(5);
      for (const id of spacedIds) {
        expect(id % 4n).toBe(1n);
        expect(((id - 1n) / 4n) % 3n).toBe(2n);
      }
    });
  },
);

describeWithServices(
  'POST /apps/:key/segments on PostgreSQL (UPDATE … RETURNING)',
  { postgres: true, redis: true },
  () => {
    const pg = suiteInstances((base) => ({ instance: base }), { server: 'postgres' });

    it('concurrent leases and takes of one entity: disjoint', async () => {
      const key = uniqueKey('pglease');
      const secret = await register(pg.instance.url, { key, mode: 'trend', step: 200, maxSizePerSecond: 0 });
      const seen = new Set<bigint>();
      const add = (id: bigint) => {
        if (seen.has(id)) throw new Error(`id ${id} twice`);
        seen.add(id);
      };
      const [leases, takes] = await Promise.all([
        Promise.all(Array.from({ length: 16 }, () => lease(pg.instance.url, key, secret, { size: 500 }))),
        Promise.all(Array.from({ length: 8 }, () => takeIds(pg.instance.url, key, secret, 50))),
      ]);
      for (const res of leases) {
        expect(res.status).toBe(200);
        idsOfLease(res.body).forEach(add);
      }
      // A take may meet a pool still filling (503): it took nothing then.
      for (const res of takes) if (res.status === 200) res.body.ids.map(BigInt).forEach(add);
      expect(seen.size).toBeGreaterThanOrEqual(16 * 500);
    });
  },
);

describeWithServices(
  'POST /apps/:key/segments while the database is down (a private mariadbd)',
  { privateMariadb: true },
  () => {
    it('503 with Retry-After while the database is down, leasing again once it is back', async () => {
      let mariadb: PrivateMariadb | undefined;
      let redis: RedisServer | undefined;
      let own: Instance | undefined;
      try {
        mariadb = await startPrivateMariadb();
        redis = await startRedisServer('none');
        own = await startInstance({ IDPOOL_DATABASE_URL: mariadb.url, IDPOOL_REDIS_URL: redis.url });
        const key = uniqueKey('down');
        const secret = await register(own.url, { key, mode: 'trend', maxSizePerSecond: 0 });
        expect((await lease(own.url, key, secret)).status).toBe(200);
        await mariadb.kill9();
        const res = await lease(own.url, key, secret);
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('unavailable');
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        await mariadb.restart();
        let back = 0;
        for (let i = 0; i < 100 && back !== 200; i++) {
          back = (await lease(own.url, key, secret)).status;
          if (back !== 200) await new Promise((r) => setTimeout(r, 100));
        }
        expect(back).toBe(200);
      } finally {
        await own?.stop();
        await redis?.stop();
        await mariadb?.destroy();
      }
    });
  },
);
