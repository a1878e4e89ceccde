import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { register, takeIds } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import {
  type Expression,
  allPanels,
  dashboardExpressions,
  exposedMetrics,
  readDashboard,
  readRules,
  ruleExpressions,
  sampledMetrics,
  selectorsOf,
} from '../support/promql';
import { createTestSchema, servicesAvailable } from '../support/services';

const REQUIRED = process.env.IDPOOL_REQUIRE_SERVICES === '1';
const promtool = spawnSync('promtool', ['--version']).status === 0;

const dashboard = readDashboard();
const rules = readRules();
const expressions: Expression[] = [...ruleExpressions(), ...dashboardExpressions(dashboard)];
const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
/** Series Prometheus makes itself from the rules file, not read from idpool. */
const FROM_PROMETHEUS = new Set(['ALERTS']);
/** Labels Prometheus adds to every scraped series (the scrape target's). */
const TARGET_LABELS = ['job', 'instance'];

async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('the dashboard and the rules read what a live /metrics exposes (MariaDB + Redis, real process)', () => {
  let setup: StoreSetup | undefined;
  let instance: Instance | undefined;
  let text = '';
  const segment = uniqueKey('mon_seg');
  const flake = uniqueKey('mon_sf');

  beforeAll(async () => {
    if (!(await servicesAvailable({ mysql: true, redis: true }))) return;
    setup = await mysqlRedisSetup();
    instance = await startInstance({ ...setup.env, IDPOOL_OPS_SAMPLE_MS: '200', IDPOOL_OPS_RATE_WINDOW_MS: '5000' });
    const segmentSecret = await register(instance.url, { key: segment, maxSizePerSecond: 1000, maxSizePerTimes: 1000 });
    const flakeSecret = await register(instance.url, { key: flake, mode: 'snowflake', maxSizePerSecond: 0 });
    for (let i = 0; i < 5; i++) {
      expect((await takeIds(instance.url, segment, segmentSecret, 100)).status).toBe(200);
      expect((await takeIds(instance.url, flake, flakeSecret, 10)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 200));
    }
    // Over the per-second limit: a 429 for the rate-limited counter.
    const answers = await Promise.all([1, 2].map(() => takeIds(instance!.url, segment, segmentSecret, 1000)));
    expect(answers.map((a) => a.status)).toContain(429);
    // The sampler publishes an entity's gauges once its pool has filled and it has two samples.
    await waitFor(`pool gauges of ${segment}`, async () => {
      text = await scrape(instance!.url);
      return (
        text.includes(`idpool_pool_size{entity="${segment}"}`) &&
        text.includes(`idpool_ops_sample_age_seconds{entity="${segment}"}`)
      );
    });
  });

  afterAll(async () => {
    await instance?.stop();
    await setup?.cleanup();
  });

  it('has per-entity series for both entities', (ctx) => {
    if (!instance) return REQUIRED ? expect.fail('MariaDB and Redis are required') : ctx.skip();
    for (const name of [
      'idpool_pool_size',
      'idpool_pool_target',
      'idpool_pool_low_watermark',
      'idpool_take_rate_ids_per_second',
      'idpool_forecast_pool_dry_seconds',
      'idpool_ops_sample_age_seconds',
      'idpool_refills_total',
    ]) {
      expect(text, name).toMatch(new RegExp(`^${name}\\{entity="${segment}"\\} \\S+$`, 'm'));
    }
    expect(text).toMatch(new RegExp(`^idpool_ids_served_total\\{entity="${flake}"\\} 50$`, 'm'));
    expect(text).toMatch(new RegExp(`^idpool_rate_limited_total\\{entity="${segment}"\\} [1-9]`, 'm'));
    expect(text).toMatch(/^idpool_dependency_up\{dependency="database"\} 1$/m);
    expect(text).toMatch(/^idpool_dependency_up\{dependency="redis"\} 1$/m);
    expect(text).toMatch(/^idpool_ops_sample_age_max_seconds \S+$/m);
  });

  it('every metric an expression reads is exposed, with the labels it matches on', (ctx) => {
    if (!instance) return REQUIRED ? expect.fail('MariaDB and Redis are required') : ctx.skip();
    const exposed = exposedMetrics(text);
    const sampled = sampledMetrics(text);
    const problems: string[] = [];
    let checked = 0;
    for (const { where, expr } of expressions) {
      const selectors = selectorsOf(expr);
      if (selectors.length === 0) problems.push(`${where}: reads no metric: ${expr}`);
      for (const { metric, labels } of selectors) {
        checked++;
        if (metric === '') problems.push(`${where}: a selector without a metric name: ${expr}`);
        else if (recorded.has(metric) || FROM_PROMETHEUS.has(metric)) continue;
        else if (!exposed.has(metric)) problems.push(`${where}: ${metric} is not in /metrics`);
        else if (sampled.has(metric)) {
          // Labels are known only from samples; a family with none yet (no fence refusal happened) has no labels to compare.
          const known = new Set([...exposed.get(metric)!, ...TARGET_LABELS]);
          for (const label of labels)
            if (!known.has(label))
              problems.push(`${where}: ${metric} has no label ${label} (it has ${[...known].join(', ')})`);
        }
      }
    }
    expect(problems).toEqual([]);
    // The check saw the expressions: every rule and every dashboard target.
    expect(expressions.length).toBe(
      rules.length +
        allPanels(dashboard).reduce((n, p) => n + (p.targets?.length ?? 0), 0) +
        dashboard.templating.list.filter((v) => v.type === 'query').length,
    );
    expect(checked).toBeGreaterThan(expressions.length);
  });

  it('reads, in rules or dashboard, every idpool family a scrape shows', (ctx) => {
    if (!instance) return REQUIRED ? expect.fail('MariaDB and Redis are required') : ctx.skip();
    const read = new Set(
      expressions.flatMap((e) => selectorsOf(e.expr).map((s) => s.metric.replace(/_(bucket|sum|count)$/, ''))),
    );
    const families = [...text.matchAll(/^# TYPE (idpool_\S+) /gm)].map((m) => m[1]);
    // Kept out on purpose: the worker id is a label-like number, the lease countdown is for debugging.
    const notShown = new Set(['idpool_worker_id', 'idpool_worker_lease_remaining_seconds']);
    const unread = families.filter((f) => !read.has(f) && !notShown.has(f));
    // Per-entity families are read through their idpool_all_ totals or the other way round; both are fine.
    const alsoRead = (f: string) =>
      read.has(f.replace(/^idpool_all_/, 'idpool_')) || read.has(f.replace(/^idpool_/, 'idpool_all_'));
    expect(unread.filter((f) => !alsoRead(f))).toEqual([]);
  });
});

describe('every PromQL expression parses', () => {
  let dir: string | undefined;
  beforeAll(() => {
    if (!promtool && REQUIRED)
      throw new Error('!!! promtool not installed (Debian package prometheus) and IDPOOL_REQUIRE_SERVICES=1');
    dir = mkdtempSync(join(tmpdir(), 'idpool-dashboard-rules-'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(!promtool)('promtool check rules accepts each dashboard query as a recording rule', () => {
    const queries = dashboardExpressions(dashboard);
    const file = join(dir!, 'dashboard.rules.yml');
    writeFileSync(
      file,
      stringify({
        groups: [
          { name: 'dashboard', rules: queries.map((q, i) => ({ record: `dashboard:query_${i}`, expr: q.expr })) },
        ],
      }),
    );
    const result = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    expect(`${result.stdout}${result.stderr}`).toContain(`SUCCESS: ${queries.length} rules found`);
    expect(result.status).toBe(0);
  });

  it.skipIf(!promtool)('a query with a syntax error fails that check', () => {
    const file = join(dir!, 'broken.rules.yml');
    writeFileSync(
      file,
      stringify({
        groups: [
          { name: 'broken', rules: [{ record: 'dashboard:broken', expr: 'sum by (entity (idpool_pool_size)' }] },
        ],
      }),
    );
    const result = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    expect(result.status).not.toBe(0);
  });
});

describe('deploy/grafana/idpool-dashboard.json', () => {
  const panels = allPanels(dashboard) as {
    id: number;
    type: string;
    title: string;
    gridPos: { x: number; y: number; w: number; h: number };
    datasource?: { type: string; uid: string };
    targets?: { datasource?: { type: string; uid: string }; expr: string }[];
  }[];
  const variable = (name: string) => dashboard.templating.list.find((v) => v.name === name);

  it('reads Prometheus through a ${datasource} variable, in every panel and query', () => {
    expect(dashboard.schemaVersion).toBe(39);
    expect(variable('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const p of panels.filter((p) => p.type !== 'row')) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) expect(t.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
    }
    for (const v of dashboard.templating.list.filter((v) => v.type === 'query'))
      expect(v.datasource, v.name).toEqual({ type: 'prometheus', uid: '${datasource}' });
  });

  it('picks one entity through a label_values variable that the entity panels use', () => {
    const entity = variable('entity')!;
    const query = typeof entity.query === 'string' ? entity.query : entity.query?.query;
    expect(query).toMatch(/^label_values\(idpool_pool_size\{[^}]*\}, entity\)$/);
    const entityPanels = panels.filter((p) => p.targets?.some((t) => t.expr.includes('entity="$entity"')));
    const read = new Set(
      entityPanels.flatMap((p) => p.targets!.flatMap((t) => selectorsOf(t.expr).map((s) => s.metric))),
    );
    for (const m of [
      'idpool_pool_size',
      'idpool_pool_target',
      'idpool_pool_low_watermark',
      'idpool_take_rate_ids_per_second',
      'idpool_reserve_rate_per_second',
      'idpool_forecast_pool_dry_seconds',
      'idpool_forecast_js_safe_limit_seconds',
      'idpool_forecast_int63_limit_seconds',
    ]) {
      expect(read, m).toContain(m);
    }
  });

  it('shows the fleet, dependencies and HTTP latency', () => {
    const exprs = panels.flatMap((p) => p.targets?.map((t) => t.expr) ?? []);
    const reads = (pattern: RegExp) => exprs.some((e) => pattern.test(e));
    expect(reads(/idpool_all_ids_served_total/)).toBe(true);
    expect(reads(/ALERTS\{alertname=~"Idpool\.\+", alertstate="firing"/)).toBe(true);
    expect(reads(/idpool_pool_size.*<.*idpool_pool_low_watermark/)).toBe(true);
    expect(reads(/idpool_dependency_up/)).toBe(true);
    expect(reads(/idpool_refill_failures_total/)).toBe(true);
    // The fleet row: instances alive and gone, and whether they disagree.
    expect(reads(/idpool_instances\{[^}]*state="gone"/)).toBe(true);
    expect(reads(/idpool_instances_disagree/)).toBe(true);
    expect(
      reads(/histogram_quantile\(0\.99, sum by \(route, le\) \(rate\(idpool_http_request_duration_seconds_bucket/),
    ).toBe(true);
    expect(reads(/sum by \(status\) \(rate\(idpool_http_request_duration_seconds_count/)).toBe(true);
  });

  it('has unique panel ids and no overlapping panels', () => {
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    const cells = new Map<string, string>();
    for (const p of panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x + w, p.title).toBeLessThanOrEqual(24);
      for (let i = x; i < x + w; i++) {
        for (let j = y; j < y + h; j++) {
          const at = `${i},${j}`;
          expect(cells.get(at), `${p.title} overlaps`).toBeUndefined();
          cells.set(at, p.title);
        }
      }
    }
  });
});

describe('idpool_dependency_up and idpool_refill_failures_total when Redis goes away (private redis-server, kill -9)', () => {
  let redis: RedisServer | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  let instance: Instance | undefined;

  beforeAll(async () => {
    if (!(await servicesAvailable({ mysql: true }))) return;
    redis = await startRedisServer('none');
    schema = await createTestSchema('mysql');
    instance = await startInstance({
      IDPOOL_DATABASE_URL: schema.url,
      IDPOOL_REDIS_URL: redis.url,
      IDPOOL_OPS_SAMPLE_MS: '200',
    });
  });

  afterAll(async () => {
    await instance?.stop();
    await redis?.stop();
    await schema?.drop();
  });

  it('reads 0 for redis and counts failed refills while it is down, 1 again once it is back', async (ctx) => {
    if (!instance) return REQUIRED ? expect.fail('MariaDB is required') : ctx.skip();
    const key = uniqueKey('mon_dep');
    const secret = await register(instance.url, { key, maxSizePerSecond: 0 });
    expect((await takeIds(instance.url, key, secret, 10)).status).toBe(200);
    let text = await scrape(instance.url);
    expect(text).toMatch(/^idpool_dependency_up\{dependency="redis"\} 1$/m);
    expect(text).toMatch(/^idpool_refill_failures_total 0$/m);

    await redis!.kill9();
    await waitFor('redis down in /metrics and a failed refill counted', async () => {
      text = await scrape(instance!.url);
      return (
        /^idpool_dependency_up\{dependency="redis"\} 0$/m.test(text) &&
        /^idpool_refill_failures_total [1-9]/m.test(text)
      );
    });
    expect(text).toMatch(/^idpool_dependency_up\{dependency="database"\} 1$/m);

    await redis!.restart();
    await waitFor('redis up again in /metrics', async () =>
      /^idpool_dependency_up\{dependency="redis"\} 1$/m.test(await scrape(instance!.url)),
    );
  });
});
