import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdpoolClient, IdpoolInvalidRequestError, IdpoolUnauthorizedError } from '../../src/client';
import { uniqueKey } from '../support/configs';
import { type Front, startFront } from '../support/front';
import { ADMIN_TOKEN, call, register } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { waitFor } from '../support/wait';

function expectIncreasing(ids: string[]) {
  for (let i = 1; i < ids.length; i++) {
    if (!(BigInt(ids[i]) > BigInt(ids[i - 1]))) throw new Error(`not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
  }
}

const idsOf = (res: { body: { ids: string[] } }) => res.body.ids;

describeWithServices('IdpoolClient against two real instances (MariaDB + Redis)', { mysql: true, redis: true }, () => {
  let schema: Awaited<ReturnType<typeof createTestSchema>>;
  let a: Instance;
  let b: Instance;
  const fronts: Front[] = [];
  const front = async (...args: Parameters<typeof startFront>) => {
    const f = await startFront(...args);
    fronts.push(f);
    return f;
  };

  beforeAll(async () => {
    schema = await createTestSchema();
    const env = { IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv() };
    a = await startInstance(env);
    b = await startInstance(env);
  });

  afterAll(async () => {
    await Promise.all(fronts.map((f) => f.close()));
    await a?.stop();
    await b?.stop();
    await schema?.drop();
  });

  async function entity(mode: 'monotonic' | 'trend', extra: Record<string, unknown> = {}) {
    const key = uniqueKey(mode);
    const secret = await register(a.url, { key, mode, step: 100, maxPoolSize: 2000, maxSizePerSecond: 0, ...extra });
    return { key, secret };
  }

  it('answers a repeated Idempotency-Key with the same ids on either instance; a new key gets new ids', async () => {
    const { key, secret } = await entity('monotonic');
    const post = (base: string, idem: string, count = 5) =>
      call(`${base}/apps/${key}/ids`, { token: secret, body: { count }, headers: { 'idempotency-key': idem } });

    const first = await post(a.url, 'order-42/attempt');
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await post(a.url, 'order-42/attempt');
    const elsewhere = await post(b.url, 'order-42/attempt');
    expect(idsOf(again)).toEqual(idsOf(first));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(idsOf(elsewhere)).toEqual(idsOf(first));

    const other = await post(b.url, 'order-43/attempt');
    expect(other.status).toBe(200);
    expect(idsOf(other)).toHaveLength(5);
    for (const id of idsOf(other)) expect(idsOf(first)).not.toContain(id);
    expect(BigInt(idsOf(other)[0])).toBeGreaterThan(BigInt(idsOf(first)[4]));

    const otherCount = await post(a.url, 'order-42/attempt', 6);
    expect(otherCount.status).toBe(409);
    expect(otherCount.body.error.code).toBe('conflict');

    const tooLong = await post(a.url, 'x'.repeat(129));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ code: 'invalid_request' });
    expect(tooLong.body.error.message).toContain('Idempotency-Key');
    // The refused request took nothing: the next id follows the last one handed out.
    const next = await post(a.url, 'order-44/attempt', 1);
    expect(BigInt(idsOf(next)[0])).toBe(BigInt(idsOf(other)[4]) + 1n);
  });

  it('retries after a timeout with the same key and gets the batch the first attempt took, not a second one', async () => {
    const { key, secret } = await entity('monotonic');
    // In front of A: forwards, but holds A's answer longer than the client waits.
    const slowA = await front(a.url, () => ({ kind: 'forward', holdMs: 1500 }));
    const client = new IdpoolClient({ endpoints: [slowA.url, b.url], entities: { [key]: { secret } }, timeoutMs: 400 });

    const ids = await client.take(key, 7);
    expect(slowA.requests).toHaveLength(1);
    const heldBack = JSON.parse(slowA.requests[0].upstreamBody!).ids;
    expect(ids).toEqual(heldBack);

    // The next call is a new request with a new key: new ids right after.
    const more = await client.take(key, 3);
    expect(BigInt(more[0])).toBe(BigInt(ids[6]) + 1n);
  });

  it('honours Retry-After from a 503 before asking again', async () => {
    const { key, secret } = await entity('monotonic');
    const f = await front(a.url, (_req, i) =>
      i === 0
        ? {
            kind: 'answer',
            status: 503,
            body: { error: { code: 'pool_exhausted', message: 'empty' } },
            headers: { 'retry-after': '1' },
          }
        : { kind: 'forward' },
    );
    const client = new IdpoolClient({ endpoints: f.url, entities: { [key]: { secret } } });
    const t0 = performance.now();
    const ids = await client.take(key, 2);
    const elapsed = performance.now() - t0;
    expect(ids).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(1000);
    expect(f.requests).toHaveLength(2);
    expect(f.requests[1].idempotencyKey).toBe(f.requests[0].idempotencyKey);
  });

  it('never retries a 4xx, on any endpoint', async () => {
    const { key, secret } = await entity('monotonic', { maxSizePerTimes: 10 });
    const fa = await front(a.url);
    const fb = await front(b.url);
    const wrong = new IdpoolClient({ endpoints: [fa.url, fb.url], entities: { [key]: { secret: 'not-the-secret' } } });
    const unauthorized = await wrong.take(key, 1).catch((e) => e);
    expect(unauthorized).toBeInstanceOf(IdpoolUnauthorizedError);
    expect(unauthorized.status).toBe(401);
    expect(fa.requests.length + fb.requests.length).toBe(1);

    const right = new IdpoolClient({ endpoints: [fa.url, fb.url], entities: { [key]: { secret } } });
    const tooMany = await right.take(key, 11).catch((e) => e);
    expect(tooMany).toBeInstanceOf(IdpoolInvalidRequestError);
    expect(tooMany.code).toBe('invalid_request');
    expect(fa.requests.length + fb.requests.length).toBe(2);
  });

  it('prefetches batches into the local buffer for a trend entity', async () => {
    const { key, secret } = await entity('trend', { maxSizePerTimes: 100 });
    const f = await front(a.url);
    const client = new IdpoolClient({
      endpoints: f.url,
      entities: { [key]: { secret, mode: 'trend', buffer: { size: 100, refillBelow: 50 } } },
    });
    const taken: string[] = [];
    taken.push(await client.next(key));
    expect(f.requests.map((r) => JSON.parse(r.body))).toEqual([{ count: 100 }]);
    expect(client.buffered(key)).toBe(99);
    for (let i = 0; i < 49; i++) taken.push(await client.next(key));
    // 50 left: still no second request.
    expect(f.requests).toHaveLength(1);
    taken.push(await client.next(key));
    // 49 left, below 50: one background prefetch tops the buffer up to 100.
    await waitFor(async () => client.buffered(key) === 100, {
      message: 'the prefetch',
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    expect(f.requests).toHaveLength(2);
    expect(JSON.parse(f.requests[1].body)).toEqual({ count: 51 });
    for (let i = 0; i < 150; i++) taken.push(...(await client.take(key, 1)));
    expect(new Set(taken).size).toBe(taken.length);
    // 201 ids taken through the buffer in a handful of requests, not 201.
    expect(f.requests.length).toBeLessThanOrEqual(5);
    for (const r of f.requests) expect(r.status).toBe(200);
  });

  it('takes and decodes snowflake ids', async () => {
    const key = uniqueKey('sf');
    const secret = await register(a.url, { key, mode: 'snowflake' });
    const client = new IdpoolClient({ endpoints: [a.url, b.url], entities: { [key]: { secret, mode: 'snowflake' } } });
    const ids = await client.take(key, 3);
    expectIncreasing(ids);
    const parts = await client.decode(key, ids[0]);
    expect(parts.id).toBe(ids[0]);
    expect(Math.abs(parts.timestampMs - Date.now())).toBeLessThan(60_000);
    expect(parts.timestamp).toBe(new Date(parts.timestampMs).toISOString());
    expect(typeof parts.worker).toBe('number');
    const notOurs = await client.decode(key, (1n << 62n).toString()).catch((e) => e);
    expect(notOurs).toBeInstanceOf(IdpoolInvalidRequestError);
  });

  it('never buffers a monotonic entity: one request per take, in pool order', async () => {
    const { key, secret } = await entity('monotonic');
    const f = await front(a.url);
    const client = new IdpoolClient({ endpoints: f.url, entities: { [key]: { secret, mode: 'monotonic' } } });
    const taken: string[] = [];
    for (let i = 0; i < 20; i++) taken.push(await client.next(key));
    taken.push(...(await client.take(key, 5)));
    expect(f.requests.map((r) => JSON.parse(r.body).count)).toEqual([...Array(20).fill(1), 5]);
    expect(client.buffered(key)).toBe(0);
    expectIncreasing(taken);
    expect(
      () =>
        new IdpoolClient({
          endpoints: f.url,
          entities: { [key]: { secret, mode: 'monotonic', buffer: { size: 10 } } },
        }),
    ).toThrow(TypeError);
  });
});

describe('Idempotency-Key on the embedded default (SQLite + in-process pool)', () => {
  let instance: Instance;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idpool-client-'));
    instance = await startInstance({ IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}`, IDPOOL_REDIS_URL: '' });
  });

  afterAll(async () => {
    await instance?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers the same key with the same ids and a new key with new ids', async () => {
    const key = uniqueKey('embedded');
    const secret = await register(instance.url, { key, step: 100, maxPoolSize: 1000, maxSizePerSecond: 0 });
    const post = (idem: string) =>
      call(`${instance.url}/apps/${key}/ids`, {
        token: secret,
        body: { count: 3 },
        headers: { 'idempotency-key': idem },
      });
    const first = await post('k-1');
    const again = await post('k-1');
    const other = await post('k-2');
    expect(first.status).toBe(200);
    expect(idsOf(again)).toEqual(idsOf(first));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(idsOf(other)).not.toEqual(idsOf(first));
    expect(BigInt(idsOf(other)[0])).toBeGreaterThan(BigInt(idsOf(first)[2]));
    const admin = await call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
    expect(admin.status).toBe(200);
  });
});
