/**
 * Worker leases across real service processes on one MariaDB schema or PostgreSQL database
 * (docs/design.md invariant 5): distinct worker ids at simultaneous start, rows
 * created once, lapse after SIGSTOP with takeover, restart behind the
 * recorded last timestamp, and every worker id taken.
 */
import { afterAll, afterEach, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database';
import { SnowflakeLayout } from '../../src/snowflake/layout';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { SQL_SERVERS, type SqlServer, createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const started: Instance[] = [];
const schemas: { drop(): Promise<void> }[] = [];

afterEach(async () => {
  for (const i of started.splice(0)) {
    try {
      i.proc.kill('SIGCONT');
    } catch {
      // already gone
    }
    await i.kill9();
  }
});

afterAll(async () => {
  for (const s of schemas.splice(0)) await s.drop();
});

/** Short lease timing so lapses happen within a test: TTL 3 s, stop issuing after 2 s, heartbeat every 1 s. */
const FAST_LEASE = {
  IDPOOL_WORKER_LEASE_TTL_MS: '3000',
  IDPOOL_WORKER_LEASE_MARGIN_MS: '1000',
  IDPOOL_WORKER_HEARTBEAT_SECONDS: '1',
};

async function createSchema(server: SqlServer) {
  const s = await createTestSchema(server);
  schemas.push(s);
  return s;
}

async function start(env: Record<string, string>): Promise<Instance> {
  const i = await startInstance({ IDPOOL_REDIS_URL: '', ...FAST_LEASE, ...env });
  started.push(i);
  return i;
}

async function selfWorker(i: Instance): Promise<number | undefined> {
  const res = await call(`${i.url}/admin/workers`, { token: ADMIN_TOKEN });
  expect(res.status).toBe(200);
  return res.body.workers.find((w: { self: boolean }) => w.self)?.workerId;
}

/** One statement through idpool's own Database wrapper, so it reads the same on every SQL server. */
async function sql<T = any>(
  url: string,
  query: string | ((db: Database) => string),
  params: unknown[] = [],
): Promise<T[]> {
  const db = await openDatabase(url, { migrate: false });
  try {
    return await db.query<T>(typeof query === 'function' ? query(db) : query, params);
  } finally {
    await db.close();
  }
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Takes snowflake ids until the entity is known to this instance (registered through another one). */
async function takeWhenReady(i: Instance, key: string, secret: string, count: number): Promise<string[]> {
  return until(`ids from ${i.url}`, async () => {
    const res = await takeIds(i.url, key, secret, count);
    return res.status === 200 ? res.body.ids : undefined;
  });
}

const layout = SnowflakeLayout.create({}, Date.now());

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(`worker leases across processes (${name})`, { [server]: true }, () => {
    const schema = () => createSchema(server);

    it('two, then four processes starting at the same moment get distinct worker ids; rows are created once', async () => {
      for (const n of [2, 4]) {
        const db = await schema();
        const env = { IDPOOL_DATABASE_URL: db.url, IDPOOL_WORKER_MIN: '1', IDPOOL_WORKER_MAX: '8' };
        const instances = await Promise.all(Array.from({ length: n }, () => start(env)));
        const workers = await Promise.all(instances.map(selfWorker));
        expect(workers.every((w) => typeof w === 'number' && w >= 1 && w <= 8)).toBe(true);
        expect(new Set(workers).size).toBe(n);

        const rows = await sql(db.url, 'SELECT worker_id, create_time, lease_version FROM worker ORDER BY worker_id');
        expect(rows.map((r) => Number(r.worker_id))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        // One INSERT created them all: the others found them there.
        expect(new Set(rows.map((r) => r.create_time)).size).toBe(1);
        expect(rows.filter((r) => Number(r.lease_version) > 0).length).toBe(n);

        // Their ids carry their own worker ids and never collide.
        const secret = await register(instances[0].url, { key: 'sf', mode: 'snowflake', maxSizePerSecond: 0 });
        const batches = await Promise.all(instances.map((i) => takeWhenReady(i, 'sf', secret, 500)));
        batches.forEach((ids, k) => {
          for (const id of ids) expect(layout.decompose(id).worker).toBe(workers[k]);
        });
        const all = batches.flat();
        expect(new Set(all).size).toBe(all.length);
        for (const i of started.splice(0)) await i.kill9();
      }
    });

    it('when every worker id is taken: readyz is not ready with a clear reason, and snowflake requests get 503', async () => {
      const db = await schema();
      const env = { IDPOOL_DATABASE_URL: db.url, IDPOOL_WORKER_MIN: '1', IDPOOL_WORKER_MAX: '2' };
      const [a] = [await start(env), await start(env)];
      const late = await start(env);
      const ready = await call(`${late.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.checks.lease).toMatch(/every worker id in 1\.\.2 is leased by a live instance/);
      expect(late.output()).toMatch(/every worker id in 1\.\.2 is leased/);
      const secret = await register(late.url, { key: 'sf', mode: 'snowflake', maxSizePerSecond: 0 });
      const res = await takeIds(late.url, 'sf', secret, 1);
      expect(res.status).toBe(503);
      expect(res.body.error?.code).toBe('unavailable');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // When one instance stops, the waiting one takes its worker id on a heartbeat.
      const freed = await selfWorker(a);
      expect(await a.stop()).toBe(0);
      await until('late instance ready', async () =>
        (await call(`${late.url}/readyz`)).status === 200 ? true : undefined,
      );
      expect(await selfWorker(late)).toBe(freed);
      expect((await takeIds(late.url, 'sf', secret, 5)).status).toBe(200);
    });

    it('an instance stopped (SIGSTOP) past its lease TTL issues nothing; the instance that takes its worker id never collides with it', async () => {
      const db = await schema();
      const env = { IDPOOL_DATABASE_URL: db.url, IDPOOL_WORKER_MIN: '1', IDPOOL_WORKER_MAX: '1' };
      const a = await start(env);
      expect(await selfWorker(a)).toBe(1);
      const secret = await register(a.url, { key: 'sf', mode: 'snowflake', maxSizePerSecond: 0 });
      const idsA: string[] = [];
      for (let k = 0; k < 5; k++) idsA.push(...(await takeIds(a.url, 'sf', secret, 1000)).body.ids);

      // B starts while A renews its lease, so it starts without a worker id
      // however long starting takes (more than A's 3 s TTL on a loaded machine).
      const b = await start(env);
      expect((await call(`${b.url}/readyz`)).status).toBe(503);
      a.proc.kill('SIGSTOP');
      await until('B to take worker id 1', async () =>
        (await call(`${b.url}/readyz`)).status === 200 ? true : undefined,
      );
      expect(await selfWorker(b)).toBe(1);
      const idsB: string[] = [];
      for (let k = 0; k < 5; k++) idsB.push(...(await takeWhenReady(b, 'sf', secret, 1000)));

      a.proc.kill('SIGCONT');
      // Everything A answers from now on is a refusal: its lease lapsed on its own monotonic clock.
      const afterWake: number[] = [];
      for (let k = 0; k < 20; k++) {
        const res = await takeIds(a.url, 'sf', secret, 100);
        afterWake.push(res.status);
        if (res.status === 200) idsA.push(...res.body.ids);
      }
      expect(afterWake.every((s) => s === 503)).toBe(true);
      const readyA = await call(`${a.url}/readyz`);
      expect(readyA.status).toBe(503);
      expect(readyA.body.checks.lease).toMatch(/not renewed within its TTL|lost worker id 1|every worker id in 1\.\.1/);
      // B still issues; nothing collides.
      idsB.push(...(await takeIds(b.url, 'sf', secret, 1000)).body.ids);
      const all = [...idsA, ...idsB];
      expect(new Set(all).size).toBe(all.length);
      const lastA = idsA.reduce((m, id) => (BigInt(id) > m ? BigInt(id) : m), 0n);
      for (const id of idsB) expect(layout.toTime(id).getTime()).toBeGreaterThan(layout.toTime(lastA).getTime());
    });

    it('a restart behind the recorded last_timestamp (clock rolled back) issues nothing at or before it', async () => {
      const db = await schema();
      const env = {
        IDPOOL_DATABASE_URL: db.url,
        IDPOOL_WORKER_MIN: '1',
        IDPOOL_WORKER_MAX: '1',
        IDPOOL_SNOWFLAKE_MAX_WAIT_MS: '200',
      };
      const first = await start(env);
      const secret = await register(first.url, { key: 'sf', mode: 'snowflake', maxSizePerSecond: 0 });
      const before = (await takeIds(first.url, 'sf', secret, 1000)).body.ids;
      await first.kill9();
      // The worker's recorded last timestamp is 5 s ahead of the clock: exactly
      // what a restart sees after the clock was set back 5 s (past the start-up,
      // 0.3–1.5 s, with seconds to spare). Free the row so the restart can take it at once.
      await sql(
        db.url,
        (d) => `UPDATE worker SET last_timestamp = ${d.nowMs} + 5000, heartbeat_at = 0 WHERE worker_id = 1`,
      );
      const [{ last }] = await sql(db.url, 'SELECT last_timestamp AS last FROM worker WHERE worker_id = 1');
      const recorded = Number(last);

      const second = await start(env);
      expect(await selfWorker(second)).toBe(1);
      expect(Date.now()).toBeLessThan(recorded - 1000);
      const early = await takeIds(second.url, 'sf', secret, 1);
      expect(early.status).toBe(503);
      expect(early.body.error?.code).toBe('unavailable');
      expect(early.body.error?.message).toMatch(/last timestamp recorded for this worker/);
      expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const after = await until(
        'ids after the recorded last timestamp',
        async () => {
          const res = await takeIds(second.url, 'sf', secret, 1000);
          return res.status === 200 ? res.body.ids : undefined;
        },
        30_000,
      );
      for (const id of after) expect(layout.toTime(id).getTime()).toBeGreaterThan(recorded);
      const all = [...before, ...after];
      expect(new Set(all).size).toBe(all.length);
    });
  });
}
