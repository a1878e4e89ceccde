import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { register } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';

describe('log volume during a Redis outage under load', () => {
  let redis: RedisServer;
  let instance: Instance;
  let dir: string;

  beforeAll(async () => {
    redis = await startRedisServer('none');
    dir = mkdtempSync(join(tmpdir(), 'idpool-logs-'));
    instance = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}`,
      IDPOOL_REDIS_URL: redis.url,
    });
  });

  afterAll(async () => {
    await instance?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes a bounded number of lines a second, counting the repeats', async () => {
    const secret = await register(instance.url, { key: 'outage', maxSizePerSecond: 0 });
    await redis.kill9();
    const before = instance.output().length;
    const started = Date.now();
    const statuses = new Map<number, number>();
    let requests = 0;
    const transportErrors: string[] = [];
    const load = async () => {
      // At least 4 s and 300 requests: on a loaded machine (2 cores, a dozen
      // test processes) 4 s alone gave under 200, too few to show the folding.
      while (Date.now() - started < 4000 || (requests < 300 && Date.now() - started < 30_000)) {
        requests++;
        try {
          const res = await fetch(`${instance.url}/apps/outage/ids`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body: '{"count":1}',
          });
          await res.arrayBuffer();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        } catch (err) {
          // A dead service is a finding (checked below); a lone reset on a loaded machine is not.
          transportErrors.push(String((err as Error).cause ?? err));
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, load));
    const seconds = (Date.now() - started) / 1000;
    // Let the last counts (written once a second) and the buffer reach the pipe.
    await new Promise((r) => setTimeout(r, 2500));
    const lines = instance
      .output()
      .slice(before)
      .split('\n')
      .filter((l) => l.startsWith('{'));
    const repeated = lines.map((l) => JSON.parse(l) as { repeated?: number }).filter((l) => (l.repeated ?? 0) > 0);
    process.stderr.write(
      `log volume: ${requests} requests in ${seconds.toFixed(1)} s (${JSON.stringify(Object.fromEntries(statuses))}) wrote ${lines.length} lines, ${repeated.length} with counts\n`,
    );
    expect(instance.proc.exitCode, instance.output().slice(-2000)).toBeNull();
    expect(transportErrors.length, transportErrors.slice(0, 3).join('; ')).toBeLessThan(requests / 100 + 1);
    expect(statuses.get(503)).toBeGreaterThan(200);
    // A few distinct messages (request line, dependency error, refiller, alarms), each at most ~2 lines a second.
    expect(lines.length / (seconds + 2.5)).toBeLessThan(40);
    expect(repeated.reduce((n, l) => n + (l.repeated ?? 0), 0)).toBeGreaterThan(requests / 2);
  }, 60_000);
});
