import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { uniqueKey } from '../support/configs';
import { register, takeIds } from '../support/http';
import { type Instance, type RedisServer, freePort, startInstance, startRedisServer } from '../support/processes';
import { RULES_FILE, allPanels, readDashboard, readRules, sampledMetrics, selectorsOf } from '../support/promql';
import { createTestSchema, servicesAvailable } from '../support/services';

const REQUIRED = process.env.IDPOOL_REQUIRE_SERVICES === '1';
const prometheusInstalled = spawnSync('prometheus', ['--version']).status === 0;

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * A real Prometheus (Debian's `prometheus`) scraping one idpool instance
 * every second with deploy/prometheus/idpool-rules.yml loaded, evaluated
 * every second: the rules and the dashboard's queries run on what idpool
 * really exports, not on hand-written series.
 */
describe('Prometheus evaluates the rules and every dashboard query over a live idpool (MariaDB + private Redis)', () => {
  let redis: RedisServer | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  let instance: Instance | undefined;
  let prometheus: ChildProcess | undefined;
  let promUrl = '';
  let dir: string | undefined;
  let load: Promise<void> | undefined;
  let loading = true;
  const segment = uniqueKey('live_seg');
  const flake = uniqueKey('live_sf');

  const query = async (expr: string): Promise<Sample[]> => {
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as { status: string; error?: string; data?: { result: Sample[] } };
    if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
    return body.data!.result;
  };

  const waitFor = async <T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check().catch(() => undefined);
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  beforeAll(async () => {
    if (!prometheusInstalled) {
      if (REQUIRED)
        throw new Error('!!! prometheus not installed (Debian package prometheus) and IDPOOL_REQUIRE_SERVICES=1');
      process.stderr.write(
        '\n!!! prometheus not installed (Debian package prometheus): SKIPPING the live rules test\n\n',
      );
      return;
    }
    if (!(await servicesAvailable({ mysql: true }))) return;
    redis = await startRedisServer('none');
    schema = await createTestSchema('mysql');
    instance = await startInstance({
      IDPOOL_DATABASE_URL: schema.url,
      IDPOOL_REDIS_URL: redis.url,
      IDPOOL_OPS_SAMPLE_MS: '200',
      IDPOOL_OPS_RATE_WINDOW_MS: '5000',
    });
    const segmentSecret = await register(instance.url, { key: segment, maxSizePerSecond: 0 });
    const flakeSecret = await register(instance.url, { key: flake, mode: 'snowflake', maxSizePerSecond: 0 });
    // Steady demand for the whole test: rates, forecasts and histograms have something to show.
    load = (async () => {
      while (loading) {
        await takeIds(instance.url, segment, segmentSecret, 50).catch(() => undefined);
        await takeIds(instance.url, flake, flakeSecret, 5).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    dir = mkdtempSync(join(tmpdir(), 'idpool-prometheus-'));
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    const config = {
      global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
      rule_files: [RULES_FILE],
      scrape_configs: [{ job_name: 'idpool', static_configs: [{ targets: [`127.0.0.1:${instance.port}`] }] }],
    };
    writeFileSync(join(dir, 'prometheus.yml'), stringify(config));
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: 'ignore' },
    );
    await waitFor('prometheus ready', async () => ((await fetch(`${promUrl}/-/ready`)).ok ? true : undefined));
  });

  afterAll(async () => {
    loading = false;
    await load;
    if (prometheus?.exitCode === null) {
      prometheus.kill('SIGTERM');
      await new Promise((r) => prometheus!.once('exit', r));
    }
    await instance?.stop();
    await redis?.stop();
    await schema?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('evaluates every rule without error, records the fleet rates, and has no alert pending on a healthy instance', async (ctx) => {
    if (!instance) return REQUIRED && prometheusInstalled ? expect.fail('MariaDB is required') : ctx.skip();
    // Served ids over two scrapes, and the sampler's gauges for the segment entity.
    await waitFor('recorded served rate', async () =>
      (await query('job:idpool_ids_served:rate1m > 0')).length ? true : undefined,
    );
    await waitFor(`pool ratio of ${segment}`, async () =>
      (await query(`entity:idpool_pool_size_over_low_watermark:ratio{entity="${segment}"}`)).length ? true : undefined,
    );

    const rules = await waitFor('every rule evaluated', async () => {
      const res = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
        data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
      };
      const all = res.data.groups.flatMap((g) => g.rules);
      return all.every((r) => r.health !== 'unknown') ? all : undefined;
    });
    expect(rules.length).toBeGreaterThan(20);
    expect(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`)).toEqual([]);

    // Every recording rule has data, except where a metric it reads has no sample yet (no alarm raised in this run).
    const sampled = sampledMetrics(await (await fetch(`${instance.url}/metrics`)).text());
    const recorded = readRules().flatMap((r) => (r.record ? [r] : []));
    const recordedNames = new Set(recorded.map((r) => r.record));
    for (const r of recorded) {
      const reads = selectorsOf(r.expr).filter((s) => !recordedNames.has(s.metric));
      if (reads.some((s) => !sampled.has(s.metric))) continue;
      expect((await query(r.record!)).length, `${r.record} has data`).toBeGreaterThan(0);
    }

    const served = await query(`entity:idpool_ids_served:rate1m{entity=~"${segment}|${flake}"}`);
    expect(served.map((s) => s.metric.entity).sort()).toEqual([segment, flake].sort());
    const up = await query('job_dependency:idpool_dependency_up:min');
    expect(Object.fromEntries(up.map((s) => [s.metric.dependency, s.value[1]]))).toEqual({ database: '1', redis: '1' });

    const alerts = (await (await fetch(`${promUrl}/api/v1/alerts`)).json()) as {
      data: { alerts: { labels: Record<string, string>; state: string }[] };
    };
    expect(alerts.data.alerts.map((a) => `${a.labels.alertname} ${a.state}`)).toEqual([]);
  });

  it('answers every dashboard query, with data wherever idpool exported the metrics it reads', async (ctx) => {
    if (!instance) return REQUIRED && prometheusInstalled ? expect.fail('MariaDB is required') : ctx.skip();
    const dashboard = readDashboard();
    // Grafana's $__rate_interval is at least four scrape intervals.
    const values: Record<string, string> = { job: 'idpool', entity: segment, __rate_interval: '15s' };
    await new Promise((r) => setTimeout(r, 5000)); // 15 s of scrapes behind every rate()
    const sampled = sampledMetrics(await (await fetch(`${instance.url}/metrics`)).text());
    const problems: string[] = [];
    let withData = 0;
    for (const panel of allPanels(dashboard)) {
      for (const target of (panel as { targets?: { expr: string; refId: string }[] }).targets ?? []) {
        const expr = target.expr.replace(/\$\{?(\w+)\}?/g, (m, name: string) => values[name] ?? m);
        let result: Sample[];
        try {
          result = await query(expr);
        } catch (err) {
          problems.push(`panel "${(panel as { title: string }).title}" ${target.refId}: ${(err as Error).message}`);
          continue;
        }
        // Empty only where a metric it reads has no sample yet (no exhausted pool, no fence refusal in this run).
        const unsampled = selectorsOf(expr).filter((s) => s.metric !== 'ALERTS' && !sampled.has(s.metric));
        if (result.length > 0) withData++;
        else if (unsampled.length === 0)
          problems.push(`panel "${(panel as { title: string }).title}" ${target.refId}: no data for ${expr}`);
      }
    }
    expect(problems).toEqual([]);
    expect(withData).toBeGreaterThan(35);
  });

  it('puts IdpoolDependencyUnavailable and IdpoolRefillFailing in pending when Redis is killed', async (ctx) => {
    if (!instance) return REQUIRED && prometheusInstalled ? expect.fail('MariaDB is required') : ctx.skip();
    await redis!.kill9();
    const pending = await waitFor('alerts pending', async () => {
      const res = (await (await fetch(`${promUrl}/api/v1/alerts`)).json()) as {
        data: { alerts: { labels: Record<string, string>; state: string }[] };
      };
      const names = res.data.alerts.map(
        (a) => `${a.labels.alertname}${a.labels.dependency ? `/${a.labels.dependency}` : ''} ${a.state}`,
      );
      return names.includes('IdpoolDependencyUnavailable/redis pending') &&
        names.includes('IdpoolRefillFailing pending')
        ? names
        : undefined;
    });
    // The database stays reachable: no alert for it.
    expect(pending).not.toContain('IdpoolDependencyUnavailable/database pending');
    // Recording rules run in their own group: the dashboard's reading follows within an evaluation or two.
    await waitFor('redis down in the recorded dependency state', async () => {
      const up = Object.fromEntries(
        (await query('job_dependency:idpool_dependency_up:min')).map((s) => [s.metric.dependency, s.value[1]]),
      );
      return up.database === '1' && up.redis === '0' ? true : undefined;
    });
    await redis!.restart();
  });
});
