import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { call, register, takeIds } from '../support/http';
import { runToExit, startInstance } from '../support/processes';
import { suiteDir } from '../support/temp-dir';

describe('IDPOOL_WORKER_ID in service mode', () => {
  const dir = suiteDir('idpool-fixed-worker-');

  it('is refused without IDPOOL_WORKER_ID_UNSAFE=1 (exit 2, one line naming it)', async () => {
    const run = await runToExit({ IDPOOL_DATABASE_URL: dir.sqliteUrl('refused.db'), IDPOOL_WORKER_ID: '3' });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^idpool: invalid configuration: IDPOOL_WORKER_ID: .*IDPOOL_WORKER_ID_UNSAFE=1/);
  });

  it('with IDPOOL_WORKER_ID_UNSAFE=1 starts above the last_timestamp recorded for that worker row, and records its own on stop', async () => {
    const file = dir.file('floor.db');
    const env = { IDPOOL_DATABASE_URL: `sqlite:${file}`, IDPOOL_WORKER_ID: '3', IDPOOL_WORKER_ID_UNSAFE: '1' };
    const first = await startInstance(env);
    const secret = await register(first.url, { key: 'sf', mode: 'snowflake', maxSizePerSecond: 0 });
    await first.stop();
    // A holder of worker 3 used time units up to 4 s ahead of now (a clock that ran fast, then was set back).
    const ahead = Date.now() + 4000;
    const sql = new BetterSqlite3(file);
    sql.prepare('UPDATE worker SET last_timestamp = ? WHERE worker_id = 3').run(ahead);
    sql.close();

    const second = await startInstance(env);
    // Until the clock passes the floor the generator waits, then answers 503: never an id in used time.
    let res = await takeIds(second.url, 'sf', secret, 1);
    const deadline = Date.now() + 15_000;
    while (res.status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      res = await takeIds(second.url, 'sf', secret, 1);
    }
    expect(res.status).toBe(200);
    const decoded = await call(`${second.url}/apps/sf/ids/${res.body.ids[0]}`, { token: secret });
    expect(decoded.body.worker).toBe(3);
    expect(decoded.body.timestampMs).toBeGreaterThan(ahead);
    await second.stop();

    const check = new BetterSqlite3(file);
    const row = check.prepare('SELECT last_timestamp FROM worker WHERE worker_id = 3').get() as {
      last_timestamp: number;
    };
    check.close();
    expect(row.last_timestamp).toBeGreaterThanOrEqual(decoded.body.timestampMs);
  }, 60_000);
});
