import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { SnowflakeLayout } from '../../src/snowflake/layout';
import { register, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { MYSQL_URL, REDIS_URL, clearPrefix, createTestSchema, sharedRedisEnv, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { sleep, waitFor } from '../support/wait';

const run = promisify(execFile);

/** One 200 answer: which instance gave it and its ids. */
interface Taken {
  readonly from: 'holder' | 'newcomer';
  readonly ids: readonly string[];
}

describeWithServices(
  'snowflake worker leases across a database restore (issue 29, bug 3)',
  { mysql: true, redis: true },
  () => {
    let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
    const prefix = testPrefix();
    const dir = mkdtempSync(join(tmpdir(), 'idpool-worker-restore-'));
    const running: Instance[] = [];
    afterAll(async () => {
      await Promise.all(running.map((i) => i.kill9()));
      const redis = new Redis(REDIS_URL);
      await clearPrefix(redis, prefix);
      redis.disconnect();
      await schema?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a row the restore shows free goes to a newcomer above every time the holder used, and the holder stops: no id twice', async () => {
      schema = await createTestSchema();
      const mysql = new URL(MYSQL_URL);
      const client = ['-h', mysql.hostname, '-P', mysql.port || '3306', '-u', decodeURIComponent(mysql.username)];
      // One worker id for the deployment, so the newcomer can only take the holder's. The holder
      // renews every 8 s and the newcomer tries every second, so after a restore right after one of
      // the holder's renewals the newcomer takes the row the restore shows free before the holder
      // renews again (a 20 s TTL allows heartbeats up to 8 s).
      const env = {
        IDPOOL_DATABASE_URL: schema.url,
        ...sharedRedisEnv(prefix),
        IDPOOL_WORKER_MIN: '1',
        IDPOOL_WORKER_MAX: '1',
        IDPOOL_WORKER_LEASE_TTL_MS: '20000',
        IDPOOL_REQUEST_LOG: '0',
      };
      const start = async (heartbeatSeconds: number) => {
        const instance = await startInstance({ ...env, IDPOOL_WORKER_HEARTBEAT_SECONDS: String(heartbeatSeconds) });
        running.push(instance);
        return instance;
      };
      const sql = await createConnection({ uri: schema.url });
      const heartbeatAt = async () => {
        const [rows] = await sql.query('SELECT CAST(heartbeat_at AS CHAR) AS h FROM worker WHERE worker_id = 1');
        return (rows as { h: string }[])[0].h;
      };
      const layout = SnowflakeLayout.create(loadConfig(env).snowflake, Date.now());

      // The backup: the entity registered, worker 1 given back by a clean stop (lease_version 1, free).
      const first = await start(8);
      const secret = await register(first.url, { key: 'sf', mode: 'snowflake', maxSizePerSecond: 0 });
      expect((await takeIds(first.url, 'sf', secret, 10)).status).toBe(200);
      expect(await first.stop()).toBe(0);
      const backup = join(dir, 'backup.sql');
      await run('sh', ['-c', `mysqldump ${client.join(' ')} --single-transaction ${schema.name} > '${backup}'`]);

      // The holder leases worker 1 again (lease_version 2) and serves under load.
      const holder = await start(8);
      const taken: Taken[] = [];
      let loading = true;
      const load = async (instance: Instance, from: Taken['from']) => {
        while (loading) {
          const res = await takeIds(instance.url, 'sf', secret, 100).catch(() => undefined);
          if (res?.status === 200) taken.push({ from, ids: res.body.ids });
          // Up to 100 takes a second each (a tight loop kept a core busy for the file's length); 20 ms after a refusal.
          await sleep(res?.status === 200 ? 10 : 20);
        }
      };
      const loads = [load(holder, 'holder'), load(holder, 'holder')];
      await waitFor(() => taken.length >= 50, { message: 'the holder to serve' });
      // The newcomer finds no worker id free and tries again every second, under load too.
      const newcomer = await start(1);
      loads.push(load(newcomer, 'newcomer'), load(newcomer, 'newcomer'));

      // The restore, under load, just after a renewal of the holder's: worker 1 is back at
      // lease_version 1 and looks free, while the holder holds version 2 (which the newcomer's
      // bump makes the row's version again).
      const renewed = await heartbeatAt();
      await waitFor(async () => (await heartbeatAt()) !== renewed, { message: "the holder's renewal" });
      await run('sh', ['-c', `mysql ${client.join(' ')} ${schema.name} < '${backup}'`]);
      await sql.end();
      // Past one lease TTL (15 s), by which the newcomer has issued, and on for a few heartbeats more.
      await waitFor(() => taken.some((t) => t.from === 'newcomer'), {
        timeoutMs: 40_000,
        message: 'the newcomer to issue',
      });
      await sleep(6000);
      loading = false;
      await Promise.all(loads);

      // No id twice.
      const seen = new Map<string, Taken['from']>();
      const repeats: string[] = [];
      for (const t of taken)
        for (const id of t.ids) {
          if (seen.has(id)) repeats.push(`${id} (${seen.get(id)}, then ${t.from})`);
          else seen.set(id, t.from);
        }
      expect(repeats.slice(0, 5), `${repeats.length} ids issued twice`).toEqual([]);

      // Worker 1's time units are split: every one the holder used comes before every one the newcomer used.
      const units = (from: Taken['from']) =>
        taken.filter((t) => t.from === from).flatMap((t) => t.ids.map((id) => layout.decompose(id)));
      const holderIds = units('holder');
      const newcomerIds = units('newcomer');
      expect(newcomerIds.length).toBeGreaterThan(0);
      expect(new Set([...holderIds, ...newcomerIds].map((p) => p.worker))).toEqual(new Set([1]));
      const holderLast = holderIds.reduce((max, p) => Math.max(max, p.timestamp), -Infinity);
      const newcomerFirst = newcomerIds.reduce((min, p) => Math.min(min, p.timestamp), Infinity);
      expect(holderLast).toBeLessThan(newcomerFirst);
      // The holder learned it at a renewal and stopped issuing with worker 1 (it has no other to take).
      expect(holder.output()).toMatch(/worker id was claimed by another instance although this one held it/);
      const ready = await fetch(`${holder.url}/readyz`);
      expect(ready.status).toBe(503);
    }, 120_000);
  },
);
