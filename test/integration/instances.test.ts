import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fleetKeys } from '../../src/redis/keys';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, parseMetrics, register, registerNew, SMALL_POOL, takeIds } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { waitFor } from '../support/wait';

/**
 * Three real instances on one MariaDB schema and a private redis-server (so
 * the fleet is exactly these three, and Redis can be stopped and killed):
 * alarms cross instances through the fleet stream, heartbeats list each
 * instance, take rates are summed, a kill -9 shows the instance gone, and
 * with Redis stopped or killed every page still answers, from the local ring.
 */

/** Short, so "gone within its TTL" is seconds of test; heartbeats every 600 ms. */
const TTL_MS = 3000;
/** The dashboard reads the service every 2 s (POLL_MS in dashboard.js): a poll of the page waits two of its reads and a margin. */
const DASHBOARD_POLL_MS = 5000;
const OPS_TOKEN = 'test-ops-token-fedcba9876543210fedcba';
const RATE_WINDOW_MS = 5000;
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '..', 'artifacts');

interface InstanceRow {
  id: string;
  address: string;
  state: 'alive' | 'gone';
  self: boolean;
  epoch: string | null;
  version: string;
  node: string;
  workerId: number | null;
  dialect: string;
  lastSampleAt: string | null;
  startedAt: string;
  disagrees: string[];
}

describeWithServices('the fleet: three real instances sharing one Redis', { mysql: true }, () => {
  let redis: RedisServer;
  let schema: Awaited<ReturnType<typeof createTestSchema>>;
  let admin: Redis;
  let a: Instance, b: Instance, c: Instance;
  let browser: Browser | undefined;
  const idOf = (i: Instance) => `${hostname()}:${i.proc.pid}`;
  const instances = async (i: Instance) => call(`${i.url}/admin/instances`, { token: ADMIN_TOKEN });
  const ops = async (i: Instance, q = '') => call(`${i.url}/admin/ops${q}`, { token: ADMIN_TOKEN });

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install -y chromium`);
    [redis, schema] = await Promise.all([startRedisServer('none'), createTestSchema('mysql')]);
    admin = new Redis(redis.url);
    // Redis is killed on purpose below; this client reconnects.
    admin.on('error', () => undefined);
    const env = {
      IDPOOL_DATABASE_URL: schema.url,
      IDPOOL_REDIS_URL: redis.url,
      IDPOOL_INSTANCE_TTL_MS: String(TTL_MS),
      IDPOOL_OPS_TOKEN: OPS_TOKEN,
      IDPOOL_OPS_SAMPLE_MS: '200',
      IDPOOL_OPS_RATE_WINDOW_MS: String(RATE_WINDOW_MS),
    };
    // One first, so the schema is migrated once.
    a = await startInstance(env);
    [b, c] = await Promise.all([startInstance(env), startInstance(env)]);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    admin?.disconnect();
    await Promise.all([a, b, c].map((i) => i?.stop()));
    await redis?.stop();
    await schema?.drop();
  });

  it('lists the three instances on each of them: versions, worker ids, the same epoch, the database, samples', async () => {
    for (const i of [a, b, c]) {
      const res = await waitFor(
        async () => {
          const r = await instances(i);
          return r.body.alive === 3 && r.body.instances.every((x: InstanceRow) => x.lastSampleAt !== null) && r;
        },
        { message: `three sampled instances on ${i.url}`, timeoutMs: 15_000 },
      );
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ source: 'redis', gone: 0, disagreement: { epoch: false, version: false } });
      const rows = res.body.instances as InstanceRow[];
      expect(rows.map((r) => r.id).sort()).toEqual([a, b, c].map(idOf).sort());
      expect(rows.filter((r) => r.self).map((r) => r.id)).toEqual([idOf(i)]);
      expect(rows.find((r) => r.self)!.address).toBe(`${hostname()}:${i.port}`);
      for (const r of rows) {
        expect(r).toMatchObject({ state: 'alive', dialect: 'mysql', node: process.version, disagrees: [] });
        expect(r.epoch).toMatch(/^[0-9a-f]{40}:[0-9a-f]{40}$/);
        expect(Date.now() - Date.parse(r.lastSampleAt!)).toBeLessThan(5000);
      }
      expect(new Set(rows.map((r) => r.epoch)).size).toBe(1);
      expect(new Set(rows.map((r) => r.version)).size).toBe(1);
      // Each holds its own snowflake worker id.
      const workers = rows.map((r) => r.workerId);
      expect(workers.every((w) => typeof w === 'number')).toBe(true);
      expect(new Set(workers).size).toBe(3);
    }
    // The read-only ops token reads the list; no token, no list.
    expect((await call(`${a.url}/admin/instances`, { token: OPS_TOKEN })).body.alive).toBe(3);
    expect((await call(`${a.url}/admin/instances`)).status).toBe(401);
    const sizes = await Promise.all([a, b, c].map((i) => admin.hstrlen(fleetKeys().instances, idOf(i))));
    process.stdout.write(`heartbeat sizes: ${sizes.join(', ')} bytes\n`);
    for (const size of sizes) expect(size).toBeLessThan(1000);
    // The gauges are each heartbeat's view (one every TTL / 5): the list above can be a heartbeat ahead of them.
    const metrics = await waitFor(
      async () => {
        const m = parseMetrics(await (await fetch(`${a.url}/metrics`)).text());
        return m.get('idpool_instances{state="alive"}') === 3 && m;
      },
      { message: 'idpool_instances{state="alive"} 3 on a', timeoutMs: TTL_MS },
    );
    expect(metrics.get('idpool_instances{state="gone"}')).toBe(0);
    expect(metrics.get('idpool_instances_disagree{on="epoch"}')).toBe(0);
  });

  it("has an alarm raised on one instance in the others' /admin/ops within 2 s, naming its instance", async () => {
    const { key, secret } = await registerNew(a.url, 'fleet_dry', { ...SMALL_POOL, maxPoolSize: 1000 });
    await waitFor(async () => (await takeIds(a.url, key, secret, 100)).status === 200, {
      message: 'the pool filled',
    });
    // The entity's row locked: no refill can reserve, so A drains the pool and answers 503 pool_exhausted.
    const lock = await createConnection({ uri: schema.url });
    let exhaustedAt = 0;
    try {
      await lock.query('BEGIN');
      await lock.query('SELECT current_offset FROM application WHERE entity_key = ? FOR UPDATE', [key]);
      for (let n = 0; n < 50 && !exhaustedAt; n++) {
        const r = await takeIds(a.url, key, secret, 100);
        if (r.status === 503) {
          expect(r.body.error?.code).toBe('pool_exhausted');
          exhaustedAt = Date.now();
        }
      }
      expect(exhaustedAt).toBeGreaterThan(0);
      const seen = await Promise.all(
        [b, c].map(async (other) => {
          const doc = await waitFor(
            async () => {
              const r = await ops(other);
              const alarm = r.body.alarms.recent.find(
                (x: { name: string; entityKey?: string }) => x.name === 'pool_exhausted' && x.entityKey === key,
              );
              return alarm && { alarm, body: r.body };
            },
            { message: `pool_exhausted of ${key} on ${other.url}`, timeoutMs: 5000, intervalMs: 25 },
          );
          return { ...doc, afterMs: Date.now() - exhaustedAt };
        }),
      );
      for (const s of seen) {
        expect(s.afterMs).toBeLessThan(2000);
        expect(s.alarm).toMatchObject({ instance: idOf(a), severity: 'critical', status: 'firing' });
        expect(s.body.alarms.scope).toBe('fleet');
        expect(s.body.alarms.note).toBeUndefined();
      }
      process.stdout.write(`pool_exhausted seen on b after ${seen[0].afterMs} ms, on c after ${seen[1].afterMs} ms\n`);

      // On B's dashboard too, with A's name on it.
      const page = await openDashboard(b);
      const li = page.locator(`#alarms li[data-alarm=pool_exhausted][data-instance="${idOf(a)}"]`).first();
      await li.waitFor({ state: 'visible', timeout: 10_000 });
      expect(await li.locator('.alarm-instance').textContent()).toBe(idOf(a));
      expect(await page.textContent('#alarms-title')).toBe('Recent alarms of the fleet');
      await page.close();
    } finally {
      await lock.query('ROLLBACK');
      await lock.end();
    }
    // The stream is capped: MAXLEN ~ on every XADD.
    expect(await admin.xlen(fleetKeys().alarms)).toBeGreaterThan(0);
  });

  it("shows the fleet's take rates summed over the three, labelled so; each instance's /metrics keeps its own", async () => {
    const flake = uniqueKey('fleet_sf');
    const secret = await register(a.url, { key: flake, mode: 'snowflake', maxSizePerSecond: 0 });
    const PER_INSTANCE = 300;
    await Promise.all(
      [a, b, c].map(async (i) => {
        for (let n = 0; n < PER_INSTANCE / 100; n++)
          expect((await takeIds(i.url, flake, secret, 100)).status).toBe(200);
      }),
    );
    // Every instance's served rate: 300 ids over the 5 s window = 60/s; the fleet's 180/s.
    const expected = (3 * PER_INSTANCE) / (RATE_WINDOW_MS / 1000);
    const doc = await waitFor(
      async () => {
        const r = await ops(a, `?q=${flake}`);
        return r.body.entities[0]?.takePerSecond >= expected * 0.99 && r.body;
      },
      { message: 'the fleet rate of the snowflake entity', timeoutMs: 3000, intervalMs: 100 },
    );
    expect(doc.entities[0]).toMatchObject({ key: flake, mode: 'snowflake' });
    expect(doc.entities[0].takePerSecond).toBeLessThanOrEqual(expected + 0.01);
    expect(doc.rates).toEqual({ scope: 'fleet', instances: 3 });
    for (const i of [a, b, c]) {
      const m = parseMetrics(await (await fetch(`${i.url}/metrics`)).text());
      expect(m.get(`idpool_ids_served_total{entity="${flake}"}`)).toBe(PER_INSTANCE);
    }

    const page = await openDashboard(a);
    await expect
      .poll(() => page.getAttribute('#take-rate-head', 'title'), { timeout: DASHBOARD_POLL_MS })
      .toMatch(/^fleet: summed over 3 instances/);
    expect(await page.textContent('#take-rate-head')).toBe('Take rate, ids/s (all instances)');
    await page.close();
  });

  it('flags an instance on another Redis epoch or version, in /admin/instances, the dashboard and /metrics', async () => {
    // What an instance still connected to an old master would publish, read by the others once replicated:
    // a heartbeat of its own with another epoch (and here another version).
    const now = Date.now();
    const stray = {
      id: 'stray-host:4242',
      address: 'stray-host:8080',
      version: '0.0.1-old',
      node: 'v24.0.0',
      startedAt: new Date(now - 60_000).toISOString(),
      workerId: null,
      epoch: `${'0'.repeat(40)}:${'1'.repeat(40)}`,
      dialect: 'mysql',
      lastSampleAt: null,
      activeAlarms: 0,
      at: now,
      ttlMs: 60_000,
    };
    await admin.hset(fleetKeys().instances, stray.id, JSON.stringify(stray));
    try {
      const res = await waitFor(async () => {
        const r = await instances(b);
        return r.body.alive === 4 && r;
      });
      expect(res.body.disagreement).toEqual({ epoch: true, version: true });
      const flagged = (res.body.instances as InstanceRow[]).filter((r) => r.disagrees.length);
      expect(flagged.map((r) => [r.id, r.disagrees])).toEqual([[stray.id, ['epoch', 'version']]]);
      await waitFor(async () => {
        const m = parseMetrics(await (await fetch(`${b.url}/metrics`)).text());
        return (
          m.get('idpool_instances_disagree{on="epoch"}') === 1 && m.get('idpool_instances_disagree{on="version"}') === 1
        );
      });
      const page = await openDashboard(b);
      await expect
        .poll(() => page.textContent('#fleet-disagree'), { timeout: 10_000 })
        .toContain('instances see different Redis epochs');
      expect(await page.getAttribute(`#instances tr[data-instance="${stray.id}"]`, 'class')).toBe('alive disagrees');
      await page.close();
    } finally {
      await admin.hdel(fleetKeys().instances, stray.id);
    }
    await waitFor(async () => (await instances(b)).body.disagreement.epoch === false, { message: 'agreement again' });
  });

  it('shows a kill -9ed instance gone within its TTL, on the others and their dashboards', async () => {
    const page = await openDashboard(a);
    await expect
      .poll(() => page.locator('#instances tbody tr[data-state=alive]').count(), { timeout: DASHBOARD_POLL_MS })
      .toBe(3);
    mkdirSync(ARTIFACTS, { recursive: true });
    const three = join(ARTIFACTS, 'fleet.png');
    await page.locator('#fleet').screenshot({ path: three });
    expect(statSync(three).size).toBeGreaterThan(5_000);
    if (process.env.IDPOOL_FLEET_SCREENSHOT) copyFileSync(three, process.env.IDPOOL_FLEET_SCREENSHOT);

    const victim = idOf(c);
    await c.kill9();
    const killedAt = Date.now();
    const goneAfterMs = await Promise.all(
      [a, b].map(async (i) => {
        await waitFor(
          async () =>
            (await instances(i)).body.instances.some((r: InstanceRow) => r.id === victim && r.state === 'gone'),
          { message: `${victim} gone on ${i.url}`, timeoutMs: TTL_MS + 3000, intervalMs: 50 },
        );
        return Date.now() - killedAt;
      }),
    );
    process.stdout.write(`kill -9 seen gone after ${goneAfterMs.join(' and ')} ms (TTL ${TTL_MS} ms)\n`);
    // Gone no later than a TTL after its last heartbeat (which came before the kill; 150 ms for the polls),
    // and not long before: its last heartbeat is at most one interval (600 ms) old at the kill, more only
    // when a loaded machine delayed it, so half a TTL is a bound that holds and still catches "gone at once".
    for (const ms of goneAfterMs) {
      expect(ms).toBeLessThanOrEqual(TTL_MS + 150);
      expect(ms).toBeGreaterThanOrEqual(TTL_MS / 2);
    }
    const res = await instances(a);
    expect(res.body).toMatchObject({ alive: 2, gone: 1 });
    await waitFor(async () => {
      const m = parseMetrics(await (await fetch(`${a.url}/metrics`)).text());
      return m.get('idpool_instances{state="gone"}') === 1 && m.get('idpool_instances{state="alive"}') === 2;
    });
    await expect
      .poll(() => page.getAttribute(`#instances tr[data-instance="${victim}"]`, 'data-state'), {
        timeout: DASHBOARD_POLL_MS,
      })
      .toBe('gone');
    expect(await page.textContent('#fleet-summary')).toBe('2 alive, 1 gone');
    const gone = join(ARTIFACTS, 'fleet-gone.png');
    await page.locator('#fleet').screenshot({ path: gone });
    if (process.env.IDPOOL_FLEET_SCREENSHOT)
      copyFileSync(gone, process.env.IDPOOL_FLEET_SCREENSHOT.replace(/\.png$/, '-gone.png'));
    await page.close();
  });

  it('answers from the local ring, saying so, while Redis is stopped or killed: no 5xx, no hang', async () => {
    const page = await openDashboard(b);
    await expect
      .poll(() => page.textContent('#alarms-title'), { timeout: DASHBOARD_POLL_MS })
      .toBe('Recent alarms of the fleet');
    // A's own alarm from the test above is in A's ring.
    const check = async (how: string) => {
      const started = Date.now();
      const [doc, list] = await Promise.all([ops(a), instances(a)]);
      const tookMs = Date.now() - started;
      process.stdout.write(`redis ${how}: /admin/ops and /admin/instances answered in ${tookMs} ms\n`);
      // Each fleet read gives up after 500 ms, and the two run side by side.
      expect(tookMs, how).toBeLessThan(1500);
      expect(doc.status, how).toBe(200);
      expect(doc.body.alarms.scope).toBe('instance');
      expect(doc.body.alarms.note).toMatch(/Redis did not answer/);
      expect(doc.body.alarms.recent.some((x: { name: string }) => x.name === 'pool_exhausted')).toBe(true);
      expect(doc.body.alarms.recent.every((x: { instance: string }) => x.instance === idOf(a))).toBe(true);
      expect(list.status, how).toBe(200);
      expect(list.body).toMatchObject({ source: 'local', alive: 1 });
      expect(list.body.note).toMatch(/Redis did not answer/);
      expect(list.body.instances.map((r: InstanceRow) => [r.id, r.self])).toEqual([[idOf(a), true]]);
    };

    // Stopped: commands sit unanswered, the fleet reads give up after 500 ms.
    process.kill(redis.pid, 'SIGSTOP');
    try {
      await check('stopped (SIGSTOP)');
      await expect
        .poll(() => page.textContent('#alarms-title'), { timeout: 10_000 })
        .toBe('Recent alarms of this instance');
      expect(await page.textContent('#alarms-note')).toMatch(/Redis did not answer/);
      expect(await page.getAttribute('#fleet', 'data-source')).toBe('local');
      expect(await page.isVisible('#fleet-note')).toBe(true);
    } finally {
      process.kill(redis.pid, 'SIGCONT');
    }
    // Killed: connections refused at once.
    await redis.kill9();
    await check('killed (kill -9)');
    await redis.restart();
    // Back: the fleet again (a fresh Redis: the heartbeats come back within a beat, the old alarms are gone).
    await waitFor(async () => (await instances(a)).body.source === 'redis' && (await instances(a)).body.alive === 2, {
      message: 'the fleet read from Redis again',
      timeoutMs: 20_000,
    });
    await expect.poll(() => page.textContent('#alarms-title'), { timeout: 10_000 }).toBe('Recent alarms of the fleet');
    await page.close();
  });

  it('takes a gracefully stopped instance off the list at once: a stop is not a loss', async () => {
    expect((await instances(a)).body.instances.map((r: InstanceRow) => r.id).sort()).toEqual([a, b].map(idOf).sort());
    expect(await b.stop()).toBe(0);
    const res = await instances(a);
    expect(res.body).toMatchObject({ source: 'redis', alive: 1, gone: 0 });
    expect(res.body.instances.map((r: InstanceRow) => r.id)).toEqual([idOf(a)]);
  });

  async function openDashboard(i: Instance): Promise<Page> {
    const page = await browser!.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(`${i.url}/admin/ui`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login button[type=submit]');
    await page.locator('#main').waitFor({ state: 'visible' });
    await page.locator('#instances tbody tr').first().waitFor({ state: 'visible' });
    return page;
  }
});
