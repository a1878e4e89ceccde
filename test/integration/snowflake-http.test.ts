/**
 * Snowflake entities through the HTTP API of an in-process service, on
 * MariaDB and on the embedded SQLite default; bad input; a restart with the
 * clock set back; the library's leased generator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/clock';
import { loadConfig } from '../../src/config/config';
import { Snowflake } from '../../src/index';
import { type Service, type ServiceOptions, createService } from '../../src/service';
import { SnowflakeLayout } from '../../src/snowflake/layout';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { startInstance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';
import { SQL_SERVERS, type SqlServer, createTestSchema } from '../support/services';

const running: Service[] = [];
const schemas: { drop(): Promise<void> }[] = [];
const dirs: string[] = [];

/** A directory of this file's own, removed after it. */
function tempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), name));
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});
afterAll(async () => {
  for (const s of schemas.splice(0)) await s.drop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The real clock, set `offsetMs` off (negative: set back), like a host whose
 * time was changed. Its sleep is the system's: one that ignored the abort
 * signal held stop() for the refill ticker's idle minute.
 */
function shiftedClock(offsetMs: number): Clock {
  return { ...systemClock, now: () => systemClock.now() + offsetMs };
}

async function serve(
  env: Record<string, string>,
  clock?: Clock,
  snowflake?: ServiceOptions['snowflake'],
): Promise<{ service: Service; url: string }> {
  const config = loadConfig({ IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN, ...env });
  const service = await createService(config, { clock, snowflake });
  running.push(service);
  const port = await service.listen(0);
  return { service, url: `http://127.0.0.1:${port}` };
}

async function serverUrl(server: SqlServer = 'mysql'): Promise<string> {
  const s = await createTestSchema(server);
  schemas.push(s);
  return s.url;
}

function sqliteUrl(): string {
  return `sqlite:${join(tempDir('idpool-sf-'), 'idpool.db')}`;
}

const RESERVED = { IDPOOL_SNOWFLAKE_RESERVED_BITS: '2', IDPOOL_SNOWFLAKE_RESERVED_VALUE: '1' };

/** Batches of unique, increasing ids; decode explains each; /admin/workers lists the lease. */
async function servesSnowflakeIds(dbUrl: string): Promise<void> {
  const { url } = await serve({ IDPOOL_DATABASE_URL: dbUrl, ...RESERVED });
  const layout = SnowflakeLayout.create({ reservedBits: 2, reservedValue: 1 }, Date.now());
  const secret = await register(url, {
    key: 'orders',
    mode: 'snowflake',
    maxSizePerTimes: 5000,
    maxSizePerSecond: 0,
  });
  const ids: string[] = [];
  for (let k = 0; k < 10; k++) {
    const res = await takeIds(url, 'orders', secret, 5000);
    expect(res.status).toBe(200);
    expect(res.body.ids).toHaveLength(5000);
    ids.push(...res.body.ids);
  }
  expect(ids.every((id) => typeof id === 'string' && /^\d+$/.test(id))).toBe(true);
  expect(new Set(ids).size).toBe(ids.length);
  for (let i = 1; i < ids.length; i++) expect(BigInt(ids[i]) > BigInt(ids[i - 1])).toBe(true);
  const single = await call(`${url}/apps/orders/ids?count=1`, { method: 'POST', token: secret });
  expect(single.body.ids).toHaveLength(1);

  const workers = await call(`${url}/admin/workers`, { token: ADMIN_TOKEN });
  const mine = workers.body.workers.find((w: { self: boolean }) => w.self);
  expect(mine).toMatchObject({ live: true });
  expect(workers.body.workers.length).toBe(1023);

  const id = ids[1234];
  const decoded = await call(`${url}/apps/orders/ids/${id}`, { token: secret });
  expect(decoded.status).toBe(200);
  const parts = layout.decompose(id);
  expect(decoded.body).toMatchObject({
    id,
    worker: mine.workerId,
    timeBack: parts.timeBack,
    sequence: parts.sequence,
    reserved: 1,
  });
  expect(Date.parse(decoded.body.timestamp)).toBe(layout.toTime(id).getTime());
  expect(Math.abs(Date.parse(decoded.body.timestamp) - Date.now())).toBeLessThan(60_000);

  const ready = await call(`${url}/readyz`);
  expect(ready.body.checks.lease).toBe('ok');
}

describe('snowflake entities over HTTP on SQLite', () => {
  it('batches of unique, increasing ids; decode explains each; /admin/workers lists the lease', () =>
    servesSnowflakeIds(sqliteUrl()));

  it('bad input is a 400 naming the problem; the entity keeps working', async () => {
    const { url } = await serve({ IDPOOL_DATABASE_URL: sqliteUrl(), ...RESERVED });
    const secret = await register(url, { key: 'sf', mode: 'snowflake', maxSizePerTimes: 100 });
    const segmentSecret = await register(url, { key: 'seg', mode: 'monotonic' });
    const layout = SnowflakeLayout.create({ reservedBits: 2, reservedValue: 1 }, Date.now());
    const otherLayout = SnowflakeLayout.create({ reservedBits: 2, reservedValue: 2 }, Date.now());
    const now = layout.timestampAt(Date.now());
    const cases: [string, RegExp][] = [
      ['abc', /decimal integer/],
      ['-5', /decimal integer/],
      ['1e5', /decimal integer/],
      ['12345678901234567890', /decimal integer|above 2\^63/],
      ['9223372036854775808', /above 2\^63/],
      // Made with another reserved value: not from this layout.
      [
        otherLayout.compose({ timestamp: now, worker: 1, timeBack: 0, sequence: 0 }).toString(),
        /reserved bits hold 2, this layout sets 1/,
      ],
      // A timestamp in the future (an id of a coarser layout read as ms, for instance).
      [
        layout.compose({ timestamp: now + 86_400_000, worker: 1, timeBack: 0, sequence: 0 }).toString(),
        /in the future/,
      ],
    ];
    for (const [id, message] of cases) {
      const res = await call(`${url}/apps/sf/ids/${encodeURIComponent(id)}`, { token: secret });
      expect(res.status, id).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.message).toMatch(message);
    }
    const segment = await call(`${url}/apps/seg/ids/100`, { token: segmentSecret });
    expect(segment.status).toBe(400);
    for (const body of [{ count: 0 }, { count: 101 }, { count: '5' }, { count: 1.5 }, { n: 1 }]) {
      const res = await call(`${url}/apps/sf/ids`, { token: secret, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await call(`${url}/apps/sf/ids/1`, { token: 'wrong' })).status).toBe(401);
    const after = await takeIds(url, 'sf', secret, 3);
    expect(after.status).toBe(200);
    expect(after.body.ids.map((id: string) => layout.decompose(id).reserved)).toEqual([1, 1, 1]);
  });

  it('out-of-range snowflake configuration stops start-up with one line naming the variable', async () => {
    const dir = tempDir('idpool-sf-cfg-');
    const cases: [Record<string, string>, RegExp][] = [
      [
        { IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '40' },
        /IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: must be an integer from 41 to 55 for time unit ms, got "40"$/,
      ],
      [
        { IDPOOL_SNOWFLAKE_TIME_UNIT: 'h', IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '46' },
        /IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: .*19 to 45/,
      ],
      [{ IDPOOL_SNOWFLAKE_EPOCH: '2999-01-01T00:00:00Z' }, /IDPOOL_SNOWFLAKE_EPOCH: is in the future/],
      [
        { IDPOOL_SNOWFLAKE_RESERVED_BITS: '1', IDPOOL_SNOWFLAKE_RESERVED_VALUE: '3' },
        /IDPOOL_SNOWFLAKE_RESERVED_VALUE: must be an integer from 0 to 1/,
      ],
      [{ IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '55' }, /IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: leaves -3 sequence bits/],
      [{ IDPOOL_WORKER_LEASE_TTL_MS: 'ten' }, /IDPOOL_WORKER_LEASE_TTL_MS: must be an integer/],
      [{ IDPOOL_SNOWFLAKE_WORKER_BITS: '12' }, /IDPOOL_SNOWFLAKE_WORKER_BITS: must be an integer from 3 to 10/],
    ];
    for (const [env, line] of cases) {
      const err = await startInstance({ IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'cfg.db')}`, ...env }, 20_000).catch(
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(Error);
      const lines = (err as Error).message.split('\n').filter((l) => l.startsWith('idpool: '));
      expect(lines, JSON.stringify(env)).toHaveLength(1);
      expect(lines[0]).toMatch(line);
    }
  });
});

describeWithServices('snowflake entities over HTTP on MariaDB', { mysql: true }, () => {
  it('batches of unique, increasing ids; decode explains each; /admin/workers lists the lease', async () =>
    servesSnowflakeIds(await serverUrl()));

  it('a restart with the clock set back (within the allowed skew) waits past the recorded last timestamp, never repeating', async () => {
    const dbUrl = await serverUrl();
    const env = { IDPOOL_DATABASE_URL: dbUrl, IDPOOL_WORKER_MIN: '1', IDPOOL_WORKER_MAX: '1' };
    const first = await serve(env);
    const secret = await register(first.url, { key: 'sf', mode: 'snowflake' });
    const before: string[] = [];
    for (let k = 0; k < 3; k++) before.push(...(await takeIds(first.url, 'sf', secret, 1000)).body.ids);
    const lastBefore = SnowflakeLayout.create({}, Date.now())
      .toTime(before[before.length - 1])
      .getTime();
    await running.splice(0)[0].stop();

    // Same worker id, host clock set back 2.5 s; the skew bound lets it start.
    const second = await serve(env, shiftedClock(-2_500), { maxClockSkewMs: 5_000, maxWaitMs: 100 });
    const refused = await takeIds(second.url, 'sf', secret, 1);
    expect(refused.status).toBe(503);
    expect(refused.body.error?.message).toMatch(/last timestamp recorded for this worker/);
    // The wait left, rounded up: 3 s when the second instance answers at once,
    // less when its start took some of the 2.5 s (a loaded machine).
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3);
    const after: string[] = [];
    const deadline = Date.now() + 10_000;
    while (after.length < 3000 && Date.now() < deadline) {
      const res = await takeIds(second.url, 'sf', secret, 1000);
      if (res.status === 200) after.push(...res.body.ids);
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(after.length).toBe(3000);
    for (const id of after)
      expect(SnowflakeLayout.create({}, Date.now()).toTime(id).getTime()).toBeGreaterThan(lastBefore);
    expect(new Set([...before, ...after]).size).toBe(before.length + after.length);
  });
});

for (const { server, name } of SQL_SERVERS)
  describeWithServices(`the library's leased snowflake generator on ${name}`, { [server]: true }, () => {
    it('Snowflake.withLease leases distinct worker ids from the same table and frees them on close', async () => {
      const databaseUrl = await serverUrl(server);
      const a = await Snowflake.withLease({ databaseUrl, workerMin: 1, workerMax: 2 });
      const b = await Snowflake.withLease({ databaseUrl, workerMin: 1, workerMax: 2 });
      try {
        expect(new Set([a.workerId, b.workerId])).toEqual(new Set([1, 2]));
        await expect(Snowflake.withLease({ databaseUrl, workerMin: 1, workerMax: 2 })).rejects.toThrow(
          /^no snowflake worker lease: every worker id in 1\.\.2/,
        );
        const ids = [
          ...Array.from({ length: 10_000 }, () => a.nextId()),
          ...Array.from({ length: 10_000 }, () => b.nextId()),
        ];
        expect(new Set(ids).size).toBe(ids.length);
      } finally {
        await a.close();
      }
      const c = await Snowflake.withLease({ databaseUrl, workerMin: 1, workerMax: 2 });
      expect(c.workerId).not.toBe(b.workerId);
      await b.close();
      await c.close();
    });
  });
