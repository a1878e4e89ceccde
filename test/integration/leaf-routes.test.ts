import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, parseMetrics, register } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

/** Twitter's epoch, Leaf's snowflake epoch (2010-11-04T01:42:54.657Z). */
const LEAF_EPOCH = 1288834974657;

/** A raw answer: Leaf clients read the status, the content type and the body bytes. */
async function raw(url: string, method = 'GET') {
  const res = await fetch(url, { method });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    retryAfter: res.headers.get('retry-after'),
    body: await res.text(),
  };
}

/** Leaf's error answer (Spring Boot's error body), timestamp aside. */
function leafError(body: string) {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  expect(Object.keys(parsed)).toEqual(['timestamp', 'status', 'error', 'message', 'path']);
  expect(typeof parsed.timestamp).toBe('number');
  const { timestamp: _t, ...rest } = parsed;
  return rest;
}

describeWithServices('Leaf routes (IDPOOL_COMPAT=leaf) over MariaDB + Redis', { mysql: true, redis: true }, () => {
  let schema: Awaited<ReturnType<typeof createTestSchema>>;
  let leaf: Instance;
  let plain: Instance;
  const segment = uniqueKey('leaf_seg');
  const flake = uniqueKey('leaf_flake');
  const native = uniqueKey('native');
  const slow = uniqueKey('leaf_slow');

  beforeAll(async () => {
    schema = await createTestSchema();
    const env = { IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv(), IDPOOL_REQUEST_LOG: 'all' };
    // Leaf's snowflake layout: its epoch, 41 bits of ms on top (docs/migrating.md).
    leaf = await startInstance({ ...env, IDPOOL_COMPAT: 'leaf', IDPOOL_SNOWFLAKE_EPOCH: String(LEAF_EPOCH) });
    plain = await startInstance(env);
    // First id past 2^53: the body must carry it exactly.
    await register(leaf.url, { key: segment, compat: ['leaf'], firstId: '9007199254740993', step: 100 });
    await register(leaf.url, { key: flake, mode: 'snowflake', compat: ['leaf'] });
    await register(leaf.url, { key: native, step: 100 });
    await register(leaf.url, { key: slow, compat: ['leaf'], maxSizePerTimes: 1, maxSizePerSecond: 1, step: 10 });
  }, 60_000);

  afterAll(async () => {
    await leaf?.stop();
    await plain?.stop();
    await schema?.drop();
  });

  it('segment route: the next id as a bare decimal text/plain body, any method, in order', async () => {
    const seen: string[] = [];
    for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
      const a = await raw(`${leaf.url}/api/segment/get/${segment}`, method);
      expect(a.status).toBe(200);
      expect(a.type).toBe('text/plain;charset=UTF-8');
      expect(a.body).toMatch(/^\d+$/);
      seen.push(a.body);
    }
    expect(seen).toEqual(['9007199254740993', '9007199254740994', '9007199254740995', '9007199254740996']);
    // The native route takes from the same line, after them.
  });

  it('snowflake route: an opted-in snowflake entity, a decimal above every id of 2010 (Leaf epoch, 41 bits)', async () => {
    const a = await raw(`${leaf.url}/api/snowflake/get/${flake}`);
    expect(a.status).toBe(200);
    expect(a.type).toBe('text/plain;charset=UTF-8');
    expect(a.body).toMatch(/^\d+$/);
    const before = Date.now();
    const id = BigInt(a.body);
    // Leaf's own layout puts the ms since its epoch above 22 bits (10 worker, 12 sequence); so does this one.
    const ms = Number(id >> 22n) + LEAF_EPOCH;
    expect(Math.abs(ms - before)).toBeLessThan(60_000);
    // Above the largest id Leaf could have made a second before: worker 1023, sequence 4095.
    const lastLeafId = (BigInt(before - 1000 - LEAF_EPOCH) << 22n) | (1023n << 12n) | 4095n;
    expect(id > lastLeafId).toBe(true);
  });

  it('unknown, not opted in, wrong family and misfit keys: the same Leaf 500', async () => {
    const expected = (path: string) => ({
      status: 500,
      error: 'Internal Server Error',
      message: 'Result{id=-2, status=EXCEPTION}',
      path,
    });
    for (const path of [
      `/api/segment/get/${uniqueKey('nobody')}`,
      `/api/segment/get/${native}`,
      `/api/snowflake/get/${native}`,
      `/api/segment/get/${flake}`,
      `/api/snowflake/get/${segment}`,
      '/api/segment/get/bad%20key',
    ]) {
      const a = await raw(`${leaf.url}${path}`);
      expect(a.status, path).toBe(500);
      expect(a.type).toBe('application/json;charset=UTF-8');
      expect(leafError(a.body)).toEqual(expected(path));
    }
  });

  it('the native rate limit applies: over it, a Leaf 500 with Retry-After, counted as rate limited', async () => {
    const first = await raw(`${leaf.url}/api/segment/get/${slow}`);
    expect(first.status).toBe(200);
    let refused: Awaited<ReturnType<typeof raw>> | undefined;
    for (let i = 0; i < 5 && !refused; i++) {
      const a = await raw(`${leaf.url}/api/segment/get/${slow}`);
      if (a.status !== 200) refused = a;
    }
    expect(refused).toBeDefined();
    expect(refused!.status).toBe(500);
    expect(Number(refused!.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(leafError(refused!.body)).toMatchObject({ message: 'Result{id=-3, status=EXCEPTION}' });
    const metrics = parseMetrics((await call(`${leaf.url}/metrics`)).body as string);
    expect(metrics.get(`idpool_rate_limited_total{entity="${slow}"}`)).toBeGreaterThanOrEqual(1);
    expect(metrics.get(`idpool_ids_served_total{entity="${segment}"}`)).toBeGreaterThanOrEqual(4);
    // The request log names the route as the router matched it.
    expect(leaf.output()).toContain('"route":"/api/segment/get/:key"');
  });

  it('an admin opts a native entity in (and out again); compat off serves nothing', async () => {
    const patch = (compat: string[]) =>
      call(`${leaf.url}/admin/apps/${native}`, { method: 'PATCH', token: ADMIN_TOKEN, body: { compat } });
    expect((await patch(['leaf'])).body.compat).toEqual(['leaf']);
    const a = await raw(`${leaf.url}/api/segment/get/${native}`);
    expect(a).toMatchObject({ status: 200, body: '0' });
    expect((await patch([])).body.compat).toEqual([]);
    expect((await raw(`${leaf.url}/api/segment/get/${native}`)).status).toBe(500);
    // Without IDPOOL_COMPAT=leaf the routes do not exist: idpool's own 404.
    const off = await call(`${plain.url}/api/segment/get/${segment}`);
    expect(off.status).toBe(404);
    expect(off.body.error.code).toBe('not_found');
  });
});
