import { hostname } from 'node:os';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, registerNew, takeIds, takeWhenReady } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { REDIS_URL } from '../support/services';
import { noonZone } from '../support/number-zones';
import { entityKeys } from '../../src/redis/keys';
import { describeWithServices } from '../support/describe-with-services';

// Page functions run in the browser; this file is type-checked without the DOM
// lib (it would type all of src/ for a browser), so the globals they use are declared here.
declare const document: {
  cookie: string;
  documentElement: { scrollWidth: number };
  querySelectorAll(
    selector: 'table',
  ): ArrayLike<{ id: string; scrollWidth: number; parentElement: { clientWidth: number } }>;
};
declare function getComputedStyle(element: unknown): { color: string };

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '..', 'artifacts');

/**
 * Every table fits the 1,280 px window: none wider than the box it sits in
 * (a `.scroll` box would scroll it sideways, cutting its last columns from
 * view), and the page no wider than the window.
 */
async function expectTablesFit(page: Page): Promise<void> {
  const overflow = await page.evaluate(() =>
    Array.from(document.querySelectorAll('table'))
      .filter((t) => t.scrollWidth > t.parentElement.clientWidth)
      .map((t) => `${t.id}: ${t.scrollWidth} px in ${t.parentElement.clientWidth} px`),
  );
  expect(overflow).toEqual([]);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
}

/** A page of 1,280 × 800 on the dashboard of `url`, signed in with the admin token. */
async function signedIn(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${url}/admin/ui`);
  await page.fill('#token', ADMIN_TOKEN);
  await page.click('#login button[type=submit]');
  await page.locator('#main').waitFor({ state: 'visible' });
  return page;
}

describeWithServices(
  'dashboard at /admin/ui in headless Chromium (MariaDB + Redis, real process)',
  { mysql: true, redis: true },
  () => {
    let setup: StoreSetup;
    let instance: Instance;
    let browser: Browser;
    let redis: Redis;

    beforeAll(async () => {
      if (!existsSync(CHROMIUM)) {
        // Not a service that may be down: CI installs it (.ci/run), so its absence is a failure.
        throw new Error(`${CHROMIUM} not found: apt-get install -y chromium`);
      }
      setup = await mysqlRedisSetup();
      redis = new Redis(REDIS_URL);
      instance = await startInstance({
        ...setup.env,
        IDPOOL_OPS_SAMPLE_MS: '200',
        // Long enough that the entities drawn from stay the busiest while 60 idle ones register on a loaded machine.
        IDPOOL_OPS_RATE_WINDOW_MS: '30000',
        // A layout with a region, which the snowflake line names (docs/scaling.md "Regions").
        IDPOOL_SNOWFLAKE_REGION_BITS: '1',
        IDPOOL_REGION: '1',
      });
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    });

    afterAll(async () => {
      await browser?.close();
      redis?.disconnect();
      await instance?.stop();
      await setup?.cleanup();
    });

    it('asks for the token, then shows a new entity whose pool, take rate and charts change as ids are drawn', async () => {
      // The width the dashboard is made to fit (a 1,280 px laptop screen): no table wider than its section.
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(String(err)));
      page.on('console', (msg) => {
        if (msg.type() === 'error') errors.push(msg.text());
      });

      const res = await page.goto(`${instance.url}/admin/ui`);
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-security-policy']).toContain("script-src 'self'");
      await page.locator('#login').waitFor({ state: 'visible' });
      expect(await page.locator('#main').isVisible()).toBe(false);

      // A wrong token is refused and not kept.
      await page.fill('#token', 'not-the-admin-token-at-all-but-long-enough');
      await page.click('#login button[type=submit]');
      await expect.poll(() => page.textContent('#login-error')).toContain('refused');
      expect(await page.evaluate(() => sessionStorage.getItem('idpool.adminToken'))).toBeNull();

      await page.fill('#token', ADMIN_TOKEN);
      await page.click('#login button[type=submit]');
      await page.locator('#main').waitFor({ state: 'visible' });
      // The token lives in this tab's sessionStorage only: not in the URL, not in a cookie.
      expect(page.url()).toBe(`${instance.url}/admin/ui`);
      expect(await page.evaluate(() => document.cookie)).toBe('');
      expect(await page.evaluate(() => sessionStorage.getItem('idpool.adminToken'))).toBe(ADMIN_TOKEN);

      // Register an entity through the API; the page picks it up on its own.
      const { key, secret } = await registerNew(instance.url, 'ui', {
        step: 500,
        maxPoolSize: 20_000,
        minSizePercent: 50,
      });
      const row = page.locator(`tr[data-entity="${key}"]`);
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      await expect
        .poll(() => row.locator('[data-field=poolSize]').textContent(), { timeout: 15_000 })
        .toBe('1,000 / 1,000'); // size / target: idle, one floor (max(step, maxSizePerTimes))
      expect(await row.locator('[data-field=takeRate]').getAttribute('data-value')).toBe('0');
      expect(await row.locator('[data-field=poolDry]').textContent()).toBe('never');
      // With Redis the alarms are the fleet's, and the fleet section lists this instance, alive, as the one answering.
      expect(await page.textContent('#alarms-title')).toBe('Recent alarms of the fleet');
      expect(await page.textContent('#alarms-note')).toContain(`answering: ${hostname()}:${instance.proc.pid}`);
      const me = page.locator(`#instances tr[data-instance="${hostname()}:${instance.proc.pid}"]`);
      await me.waitFor({ state: 'visible' });
      expect(await me.getAttribute('data-state')).toBe('alive');
      expect(await me.locator('[data-field=id]').textContent()).toContain('(this one)');
      expect(await me.locator('[data-field=address]').textContent()).toBe(`${hostname()}:${instance.port}`);
      expect(await me.locator('[data-field=dialect]').textContent()).toBe('mysql');
      expect(await me.locator('[data-field=epoch]').getAttribute('title')).toMatch(/^[0-9a-f]{40}:[0-9a-f]{40}$/);
      // Its clock against Redis's and the database's (from its heartbeat), one line each once the first check read
      // both; on one machine within IDPOOL_MAX_CLOCK_SKEW_MS (1 s), past which its snowflake takes would be refused.
      const skewCell = me.locator('[data-field=clockSkew]');
      const SKEW = /^redis (0|[+-][1-9]\d*) ms\ndatabase (0|[+-][1-9]\d*) ms$/;
      await expect.poll(() => skewCell.textContent(), { timeout: 15_000 }).toMatch(SKEW);
      for (const ms of SKEW.exec((await skewCell.textContent())!)!.slice(1))
        expect(Math.abs(Number(ms))).toBeLessThan(1000);
      expect(await page.getAttribute('#take-rate-head', 'data-scope')).toBe('fleet');

      // Draw ids for ~2 s.
      const deadline = Date.now() + 2000;
      let drawn = 0;
      while (Date.now() < deadline) {
        const r = await takeIds(instance.url, key, secret, 200);
        expect(r.status).toBe(200);
        drawn += r.body.ids.length;
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      expect(drawn).toBeGreaterThan(2000);

      await expect
        .poll(async () => Number(await row.locator('[data-field=takeRate]').getAttribute('data-value')), {
          timeout: 15_000,
        })
        .toBeGreaterThan(0);
      expect(await row.locator('[data-field=poolSize]').textContent()).not.toBe('1,000 / 1,000');
      expect(await row.locator('[data-field=poolDry]').textContent()).not.toBe('never');
      expect(await row.locator('[data-field=jsSafe]').textContent()).toMatch(/days|years/);
      expect(Number(await row.locator('[data-field=sizeChart] svg').getAttribute('data-points'))).toBeGreaterThan(5);
      expect(await row.locator('[data-field=rateChart] svg polyline').count()).toBe(1);
      // Each chart writes its scale: 0 at the bottom, the largest value shown (with separators) at the top.
      const sizeChart = row.locator('[data-field=sizeChart] svg');
      expect(await sizeChart.getAttribute('data-min')).toBe('0');
      // The pool deepened with demand: its largest size is above the 1,000 it started from, at most the 20,000 ceiling.
      const sizeMax = Number(await sizeChart.getAttribute('data-max'));
      expect(sizeMax).toBeGreaterThan(1000);
      expect(sizeMax).toBeLessThanOrEqual(20_000);
      const label = (await sizeChart.locator('text.max').textContent())!;
      expect(label).toMatch(/^\d{1,3}(,\d{3})+$/);
      expect(Number(label.replace(/,/g, ''))).toBe(sizeMax);
      expect(await sizeChart.locator('text.min').textContent()).toBe('0');
      expect(Number(await row.locator('[data-field=rateChart] svg').getAttribute('data-max'))).toBeGreaterThan(0);

      // A snowflake entity appears with its take rate (no pool).
      const flake = uniqueKey('uiflake');
      const flakeSecret = await register(instance.url, { key: flake, mode: 'snowflake' });
      for (let i = 0; i < 20; i++) expect((await takeIds(instance.url, flake, flakeSecret, 100)).status).toBe(200);
      const flakeRow = page.locator(`tr[data-entity="${flake}"]`);
      await flakeRow.waitFor({ state: 'visible', timeout: 15_000 });
      expect(await flakeRow.locator('[data-field=mode]').textContent()).toBe('snowflake');
      expect(Number(await flakeRow.locator('[data-field=takeRate]').getAttribute('data-value'))).toBeGreaterThan(0);

      // Many idle entities: the page shows the busiest 50 (busy ones first) and says how many there are.
      const idle = uniqueKey('idle');
      for (let i = 0; i < 60; i++)
        await register(instance.url, {
          key: `${idle}_${i}`,
          step: 10,
          maxPoolSize: 100,
          maxSizePerTimes: 10,
          maxSizePerSecond: 0,
        });
      await expect
        .poll(() => page.textContent('#entity-count'), { timeout: 15_000 })
        .toMatch(/^6\d entities; the 50 busiest shown$/);
      expect(await page.locator('#entities tbody tr').count()).toBe(50);
      const firstTwo = await page
        .locator('#entities tbody tr')
        .evaluateAll((rows) => rows.slice(0, 2).map((r) => r.getAttribute('data-entity')));
      expect(firstTwo.sort()).toEqual([key, flake].sort());

      // Searching by key asks the service: one idle entity found among all of them.
      await page.fill('#search', `${idle}_42`);
      await expect
        .poll(
          () =>
            page.locator('#entities tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-entity'))),
          { timeout: 15_000 },
        )
        .toEqual([`${idle}_42`]);
      expect(await page.textContent('#entity-count')).toMatch(/^1 of 6\d entities match$/);
      await page.fill('#search', '');
      await expect.poll(() => page.locator('#entities tbody tr').count(), { timeout: 15_000 }).toBe(50);
      expect(await page.textContent('#snowflake')).toMatch(/^Region 1\. Runs out of timestamp bits on /);
      await page.locator('#workers tbody tr').first().waitFor({ state: 'visible' });

      const shot = join(ARTIFACTS, 'dashboard.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      await expectTablesFit(page);

      // Each row says when it was sampled; the header, how old the oldest sample is.
      const AGO = /^(just now|\d+(\.\d)? s ago)$/;
      await expect.poll(() => row.locator('[data-field=sampled]').textContent()).toMatch(AGO);
      // The 6x entities just registered count as stale until their first sample (within two rounds).
      await expect
        .poll(() => page.textContent('#sampling'), { timeout: 15_000 })
        .toMatch(/^sampling ok: oldest sample (just now|\d+(\.\d)? s ago)$/);

      // A row the sampler cannot read is marked stale, not shown as current: its pool key
      // turned into a string makes LLEN answer WRONGTYPE for that entity alone. Its key
      // extends the first one's, so searching for that shows the two side by side.
      const staleKey = `${key}_stale`;
      await page.fill('#search', key);
      await register(instance.url, {
        key: staleKey,
        step: 500,
        maxPoolSize: 20_000,
        maxSizePerSecond: 0,
        minSizePercent: 50,
      });
      const staleRow = page.locator(`tr[data-entity="${staleKey}"]`);
      await expect
        .poll(() => staleRow.locator('[data-field=poolSize]').textContent(), { timeout: 15_000 })
        .toBe('1,000 / 1,000');
      expect(await staleRow.getAttribute('class')).toBeNull();
      const poolKey = entityKeys(staleKey, setup.redisPrefix).ids;
      await redis.del(poolKey);
      await redis.set(poolKey, 'not a list');
      await expect.poll(() => staleRow.getAttribute('class'), { timeout: 15_000 }).toBe('stale');
      await expect
        .poll(() => staleRow.locator('[data-field=sampled]').textContent(), { timeout: 15_000 })
        .toMatch(/^stale — last sampled \d+(\.\d)? s ago$/);
      expect(await staleRow.getAttribute('title')).toContain('last values read');
      // Greyed, not zeroed: the last size read stays on show.
      expect(await staleRow.locator('[data-field=poolSize]').textContent()).toBe('1,000 / 1,000');
      expect(
        await staleRow
          .locator('td')
          .first()
          .evaluate((td) => getComputedStyle(td).color),
      ).toBe('rgb(154, 163, 176)');
      await expect
        .poll(() => page.textContent('#sampling'))
        .toMatch(/^sampling behind: 1 stale entity, oldest sample \d+(\.\d)? s ago$/);
      expect(await page.locator('#sampling').getAttribute('class')).toBe('behind');
      // The others stay current.
      expect(await row.getAttribute('class')).toBeNull();
      expect(await row.locator('[data-field=sampled]').textContent()).toMatch(AGO);
      const staleShot = join(ARTIFACTS, 'dashboard-stale.png');
      await page.screenshot({ path: staleShot, fullPage: true });
      expect(statSync(staleShot).size).toBeGreaterThan(10_000);
      // A stale row's note fits too.
      await expectTablesFit(page);
      // Its pool readable again (the refiller fills the list anew): current again.
      await redis.del(poolKey);
      await expect.poll(() => staleRow.getAttribute('class'), { timeout: 15_000 }).toBeNull();
      await expect.poll(() => page.textContent('#sampling'), { timeout: 15_000 }).toMatch(/^sampling ok/);
      await page.fill('#search', '');

      // Signing out forgets the token.
      await page.click('#signout');
      await page.locator('#login').waitFor({ state: 'visible' });
      expect(await page.evaluate(() => sessionStorage.getItem('idpool.adminToken'))).toBeNull();
      // The only console error allowed is the 401 of the refused token.
      expect(errors.filter((e) => !e.includes('401'))).toEqual([]);
      await page.close();
    });

    it("shows a business-number entity's period, used / capacity and run-out in the pool's columns, at 1,280 px", async () => {
      const page = await signedIn(browser, instance.url);
      const key = uniqueKey('uinum');
      // A zone whose day is at about noon now, whatever the hour this runs: the run-out below is within the
      // forecast window, long before the day ends (at +05:30 from 18:00 UTC on, it fell after midnight).
      const { timeZone: zone, date } = noonZone();
      const secret = await register(instance.url, {
        key,
        format: 'UI{yyyy}{MM}{dd}-{seq:3}',
        timeZone: zone,
        maxSizePerSecond: 0,
      });
      // 400 of 999 at once: at that pace the period runs out long before it ends.
      for (let i = 0; i < 4; i++) expect((await takeWhenReady(instance.url, key, secret, 100)).status).toBe(200);
      const row = page.locator(`tr[data-entity="${key}"]`);
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      await expect
        .poll(() => row.locator('[data-field=periodUsed]').textContent(), { timeout: 15_000 })
        .toBe('400 / 999 used');
      for (let i = 0; i < 2; i++) expect((await takeWhenReady(instance.url, key, secret, 100)).status).toBe(200);
      await expect
        .poll(() => row.locator('[data-field=periodUsed]').textContent(), { timeout: 15_000 })
        .toBe('600 / 999 used');
      await expect
        .poll(() => row.locator('[data-field=periodRunsOut]').textContent(), { timeout: 15_000 })
        .toMatch(new RegExp(`^runs out \\d\\d:\\d\\d \\${zone}$`));
      expect(await row.locator('[data-field=mode]').textContent()).toBe('number');
      expect(await row.locator('[data-field=mode]').getAttribute('title')).toBe('business numbers, monotonic');
      // The period is the zone's day: its id is today's date there.
      const today = date.replaceAll('-', '');
      expect(await row.locator('[data-field=period]').textContent()).toBe(` ${today}`);
      expect(await row.locator('[data-field=periodRunsOut]').getAttribute('class')).toBe('error');
      expect(await row.locator('[data-field=poolSize]').count()).toBe(0);
      // Its charts fill as a pool's do: its ready numbers and its take rate over the last minutes.
      await expect
        .poll(async () => Number(await row.locator('[data-field=sizeChart] svg').getAttribute('data-points')), {
          timeout: 15_000,
        })
        .toBeGreaterThan(1);
      expect(await row.locator('[data-field=rateChart] svg').count()).toBe(1);
      const shot = join(ARTIFACTS, 'dashboard-numbers.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      await expectTablesFit(page);
      await page.close();
    });

    it('fits 1,280 px with busy entities of every kind, 64-character keys, a long zone and alarms on show', async () => {
      const page = await signedIn(browser, instance.url);
      // Keys at the 64-character limit, sharing a tag the search finds them by; each as long as a key may be.
      const tag = uniqueKey('wide');
      const long = (name: string) => `${tag}_${name}_`.padEnd(64, 'x');
      const kinds: { key: string; entity: Record<string, unknown>; count: number }[] = [
        // A small pool drained faster than it refills: pool_low and forecast_pool_dry alarms naming a long key.
        { key: long('monotonic'), entity: { step: 100, maxPoolSize: 600, maxSizePerTimes: 100 }, count: 100 },
        { key: long('trend'), entity: { mode: 'trend' }, count: 100 },
        // Ids just below 2^53: forecast_js_safe_limit, "now".
        { key: long('near_2_53'), entity: { startOffset: String(2n ** 53n - 5000n) }, count: 100 },
        { key: long('snowflake'), entity: { mode: 'snowflake' }, count: 100 },
        // An hourly period in a zone with a long name, 999 numbers an hour: forecast_period_exhausted.
        {
          key: long('number'),
          entity: { format: 'INVOICE-{yyyy}{MM}{dd}{HH}-{seq:3}', timeZone: 'America/Argentina/ComodRivadavia' },
          count: 5,
        },
        {
          key: long('gapless'),
          entity: { format: 'AV{yyyy}-{seq:8}', timeZone: 'Europe/Paris', gapless: true },
          count: 5,
        },
      ];
      const secrets = await Promise.all(
        kinds.map((k) => register(instance.url, { key: k.key, maxSizePerSecond: 0, ...k.entity })),
      );
      await page.fill('#search', tag);
      const deadline = Date.now() + 3000;
      await Promise.all(
        kinds.map(async (k, i) => {
          while (Date.now() < deadline) {
            const r = await takeIds(instance.url, k.key, secrets[i], k.count);
            // A number period may run short (409) and a drained pool may answer 503 a moment: both are the point.
            expect([200, 409, 503], JSON.stringify(r.body)).toContain(r.status);
          }
        }),
      );
      for (const k of kinds)
        await expect
          .poll(
            async () =>
              Number(await page.locator(`tr[data-entity="${k.key}"] [data-field=takeRate]`).getAttribute('data-value')),
            { timeout: 15_000 },
          )
          .toBeGreaterThan(0);
      await expect
        .poll(() => page.locator(`#alarms li[data-alarm=forecast_js_safe_limit]`).count(), { timeout: 15_000 })
        .toBeGreaterThan(0);
      // The gapless series' row shows what its ledger issued this period (its audit's count), not an empty pool.
      const gapless = kinds.findIndex((k) => k.entity.gapless === true);
      const audit = await call(`${instance.url}/apps/${kinds[gapless].key}/numbers/audit`, {
        token: secrets[gapless],
      });
      expect(audit.body.issued).toBeGreaterThan(0);
      const gaplessRow = page.locator(`tr[data-entity="${kinds[gapless].key}"]`);
      await expect
        .poll(() => gaplessRow.locator('[data-field=periodUsed]').textContent(), { timeout: 15_000 })
        .toBe(`${(audit.body.issued as number).toLocaleString('en-US')} / 99,999,999 issued`);
      expect(await gaplessRow.locator('[data-field=mode]').textContent()).toBe('gapless');
      expect(await page.locator('#entities tbody tr').count()).toBe(kinds.length);
      const shot = join(ARTIFACTS, 'dashboard-wide.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      await expectTablesFit(page);
      await page.close();
    });

    it('serves the data only with the admin token', async () => {
      const res = await fetch(`${instance.url}/admin/ops`);
      expect(res.status).toBe(401);
      const page = await fetch(`${instance.url}/admin/ui`);
      const html = await page.text();
      // The page shell carries no data.
      expect(html).not.toContain('data-entity=');
      expect(page.headers.get('cache-control')).toBe('no-store');
    });
  },
);
