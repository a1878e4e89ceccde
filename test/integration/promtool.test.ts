import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { register, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';

const REQUIRED = process.env.IDPOOL_REQUIRE_SERVICES === '1';
const promtool = spawnSync('promtool', ['--version']).status === 0;

describe('promtool check metrics over a live /metrics', () => {
  let instance: Instance | undefined;
  let dir: string | undefined;

  beforeAll(async () => {
    if (!promtool) {
      if (REQUIRED)
        throw new Error('!!! promtool not installed (Debian package prometheus) and IDPOOL_REQUIRE_SERVICES=1');
      process.stderr.write('\n!!! promtool not installed (Debian package prometheus): SKIPPING the metrics lint\n\n');
      return;
    }
    dir = mkdtempSync(join(tmpdir(), 'idpool-promtool-'));
    instance = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}`,
      IDPOOL_OPS_SAMPLE_MS: '100',
    });
  });

  afterAll(async () => {
    await instance?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("finds nothing in idpool's own series", async (ctx) => {
    if (!instance) return ctx.skip();
    // Every family gets samples: segment and snowflake entities, served ids, a 429, a 401.
    const segment = await register(instance.url, { key: 'lint-seg', maxSizePerSecond: 1000, maxSizePerTimes: 1000 });
    const flake = await register(instance.url, { key: 'lint-sf', mode: 'snowflake', maxSizePerSecond: 0 });
    await takeIds(instance.url, 'lint-seg', segment, 1000);
    await takeIds(instance.url, 'lint-seg', segment, 1000);
    await takeIds(instance.url, 'lint-sf', flake, 10);
    await takeIds(instance.url, 'lint-sf', 'wrong-secret', 1);
    await new Promise((r) => setTimeout(r, 500)); // a few samples for the gauges
    const body = await (await fetch(`${instance.url}/metrics`)).text();
    expect(body).toContain('idpool_worker_ids_in_range');
    expect(body).not.toContain('idpool_worker_ids_total');
    const run = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
    const findings = `${run.stdout}\n${run.stderr}`.split('\n').filter((l) => l.trim() !== '');
    const ours = findings.filter((l) => l.trim().startsWith('idpool_'));
    expect(ours).toEqual([]);
    // promtool did lint the text: it parses (a parse error names no metric and would hide everything).
    expect(findings.filter((l) => /error|parse/i.test(l) && !/^\w+:/.test(l.trim()))).toEqual([]);
  });
});
