import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, parseMetrics, register, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { REDIS_URL } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/redis/keys';
import { waitFor } from '../support/wait';

/** Parses Prometheus text into `name{labels}` → value. */
async function scrape(base: string): Promise<Map<string, number>> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

const metric = (m: Map<string, number>, name: string, labels: string) => m.get(`${name}{${labels}}`);

describeWithServices(
  'metrics and forecasts at /metrics (MariaDB + Redis, real process)',
  { mysql: true, redis: true },
  () => {
    let setup: StoreSetup;
    let instance: Instance;
    let base: string;
    let redis: Redis;

    beforeAll(async () => {
      setup = await mysqlRedisSetup();
      instance = await startInstance({
        ...setup.env,
        IDPOOL_OPS_SAMPLE_MS: '200',
        IDPOOL_OPS_RATE_WINDOW_MS: '5000',
        IDPOOL_REQUEST_LOG: 'all',
      });
      base = instance.url;
      redis = new Redis(REDIS_URL);
    });

    afterAll(async () => {
      redis?.disconnect();
      await instance?.stop();
      await setup?.cleanup();
    });

    it('moves served, pool, refill, HTTP and take-rate metrics as ids are taken', async () => {
      const key = uniqueKey('metrics');
      const e = `entity="${key}"`;
      const secret = await register(base, {
        key,
        step: 500,
        maxPoolSize: 10_000,
        maxSizePerSecond: 0,
        minSizePercent: 50,
      });

      // Nobody has taken anything: the pool holds one floor, max(step 500, maxSizePerTimes 1000).
      const filled = await waitFor(
        async () => {
          const m = await scrape(base);
          return metric(m, 'idpool_pool_size', e) === 1000 && m;
        },
        { message: 'pool gauges', timeoutMs: 15_000, intervalMs: 100 },
      );
      expect(metric(filled, 'idpool_pool_target', e)).toBe(1000);
      expect(metric(filled, 'idpool_pool_max', e)).toBe(10_000);
      expect(metric(filled, 'idpool_pool_low_watermark', e)).toBe(500);
      expect(metric(filled, 'idpool_refills_total', e)).toBe(1);
      expect(metric(filled, 'idpool_segments_reserved_total', e)).toBe(2);
      expect(metric(filled, 'idpool_numbers_reserved_total', e)).toBe(1000);
      expect(filled.get('idpool_refill_duration_seconds_count')).toBeGreaterThanOrEqual(1);
      expect(metric(filled, 'idpool_ids_served_total', e)).toBeUndefined();
      expect(metric(filled, 'idpool_take_rate_ids_per_second', e)).toBe(0);
      expect(metric(filled, 'idpool_forecast_pool_dry_seconds', e)).toBe(Number.POSITIVE_INFINITY);
      expect(metric(filled, 'idpool_forecast_js_safe_limit_seconds', e)).toBe(Number.POSITIVE_INFINITY);
      const idRoute = 'method="POST",route="/apps/:key/ids",status="200"';
      const before = metric(filled, 'idpool_http_request_duration_seconds_count', idRoute) ?? 0;

      // 30 requests of 100 over ~1.5 s: 3000 ids, below the watermark → a refill.
      for (let i = 0; i < 30; i++) {
        const res = await takeIds(base, key, secret, 100);
        expect(res.status).toBe(200);
        await new Promise((r) => setTimeout(r, 50));
      }
      for (let i = 0; i < 25; i++) expect((await takeIds(base, key, secret, 100)).status).toBe(200);

      const after = await waitFor(
        async () => {
          const m = await scrape(base);
          const settled = metric(m, 'idpool_current_offset', e) === metric(m, 'idpool_numbers_reserved_total', e);
          return (
            (metric(m, 'idpool_refills_total', e) ?? 0) >= 2 &&
            (metric(m, 'idpool_take_rate_ids_per_second', e) ?? 0) > 0 &&
            settled &&
            m
          );
        },
        { message: 'take rate and refill', timeoutMs: 15_000, intervalMs: 100 },
      );
      expect(metric(after, 'idpool_ids_served_total', e)).toBe(5500);
      expect(metric(after, 'idpool_http_request_duration_seconds_count', idRoute)).toBe(before + 55);
      expect(metric(after, 'idpool_numbers_reserved_total', e)).toBeGreaterThan(5500);
      // ~2,000 ids a second for a 60 s horizon: the target has grown to the ceiling.
      expect(metric(after, 'idpool_pool_target', e)).toBe(10_000);
      const dry = metric(after, 'idpool_forecast_pool_dry_seconds', e)!;
      expect(dry).toBeGreaterThan(0);
      expect(Number.isFinite(dry)).toBe(true);
      // ids near 0 and a rate of thousands a second: 2^53 is decades away, but no longer "never".
      const js = metric(after, 'idpool_forecast_js_safe_limit_seconds', e)!;
      expect(js).toBeGreaterThan(86_400 * 365);
      expect(Number.isFinite(js)).toBe(true);
      expect(metric(after, 'idpool_forecast_int63_limit_seconds', e)).toBeGreaterThan(js);

      // A 400 and a 401 are counted under their own status.
      expect((await takeIds(base, key, 'wrong-secret')).status).toBe(401);
      const m = await scrape(base);
      expect(
        metric(m, 'idpool_http_request_duration_seconds_count', 'method="POST",route="/apps/:key/ids",status="401"'),
      ).toBe(1);
      // Snowflake layout forecasts and the worker lease.
      expect(m.get('idpool_snowflake_time_exhausted_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000);
      expect(m.get('idpool_worker_lease_held')).toBe(1);
      expect(m.get('idpool_worker_lease_remaining_seconds')).toBeGreaterThan(0);
      expect(m.get('idpool_worker_id')).toBeGreaterThanOrEqual(1);
    });

    it('counts ids popped straight from Redis by trusted consumers in the take rate', async () => {
      const key = uniqueKey('direct');
      const e = `entity="${key}"`;
      await register(base, { key, step: 1000, maxPoolSize: 50_000, maxSizePerSecond: 0, minSizePercent: 10 });
      await waitFor(async () => metric(await scrape(base), 'idpool_pool_size', e) === 1000, {
        message: 'pool filled',
        timeoutMs: 15_000,
        intervalMs: 100,
      });
      // Trusted consumers LPOP the list directly: this instance serves nothing.
      // The sweep refills what they drain, and the pool deepens with their demand.
      let popped = 0;
      for (let i = 0; i < 30; i++) {
        popped += (await redis.lpop(entityKeys(key, setup.redisPrefix).ids, 500))?.length ?? 0;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(popped).toBeGreaterThanOrEqual(2000);
      const m = await waitFor(
        async () => {
          const s = await scrape(base);
          return (metric(s, 'idpool_take_rate_ids_per_second', e) ?? 0) > 1000 && s;
        },
        { message: 'take rate from direct pops', timeoutMs: 15_000, intervalMs: 100 },
      );
      expect(metric(m, 'idpool_ids_served_total', e)).toBeUndefined();
      expect(metric(m, 'idpool_pool_target', e)).toBeGreaterThan(1000);
    });

    it('with IDPOOL_REQUEST_LOG=all, logs one JSON line per request with a request id, and never a secret or token', async () => {
      const key = uniqueKey('logs');
      const secret = await register(base, { key, maxPoolSize: 2000, step: 100, maxSizePerSecond: 0 });
      const given = await call(`${base}/apps/${key}/ids?count=3`, {
        method: 'POST',
        token: secret,
        headers: { 'x-request-id': 'trace-abc.123' },
      });
      expect(given.status).toBe(200);
      expect(given.headers.get('x-request-id')).toBe('trace-abc.123');
      // A request id that could forge log content is replaced by our own.
      const forged = await call(`${base}/apps/${key}/ids`, {
        method: 'POST',
        token: secret,
        headers: { 'x-request-id': 'x"}\\n{"level":60' },
      });
      const ownId = forged.headers.get('x-request-id')!;
      expect(ownId).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
      await call(`${base}/admin/apps/${key}`, { token: ADMIN_TOKEN });

      const lines = await waitFor(
        async () => {
          const parsed = instance
            .output()
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as Record<string, unknown>)
            .filter((l) => l.msg === 'request');
          return parsed.some((l) => l.path === `/admin/apps/${key}`) && parsed;
        },
        { message: 'log lines', timeoutMs: 15_000, intervalMs: 100 },
      );
      const traced = lines.filter((l) => l.reqId === 'trace-abc.123');
      expect(traced).toHaveLength(1);
      expect(traced[0]).toMatchObject({
        method: 'POST',
        route: '/apps/:key/ids',
        path: `/apps/${key}/ids`,
        status: 200,
        component: 'http',
      });
      expect(typeof traced[0].ms).toBe('number');
      expect(lines.filter((l) => l.reqId === ownId)).toHaveLength(1);
      expect(lines.find((l) => l.path === `/admin/apps/${key}`)).toMatchObject({
        route: '/admin/apps/:key',
        status: 200,
      });
      const ids = new Set(lines.map((l) => l.reqId));
      expect(ids.size).toBe(lines.length);
      const all = instance.output();
      expect(all).not.toContain(secret);
      expect(all).not.toContain(ADMIN_TOKEN);
      expect(all).not.toContain('count=3');
    });
  },
);
