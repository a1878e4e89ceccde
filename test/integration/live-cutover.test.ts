import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { Client as PgClient } from 'pg';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { idpool } from '../support/cli';
import { ADMIN_TOKEN, call, parseMetrics } from '../support/http';
import { type PrivateMariadb, startPrivateMariadb } from '../support/mariadb';
import { type PostgresServer, startPostgresServer } from '../support/postgres-server';
import { type Instance, startInstance, waitExit } from '../support/processes';
import { type TestSchema, createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { waitFor } from '../support/wait';
import { TINYID_TOKEN, incumbentTables } from '../support/incumbent-tables';

const FIXTURE = join(__dirname, 'fixtures', 'incumbent-allocator.ts');
const TINYID_DELTA = 2n;
const TINYID_REMAINDER = 1n;
/** How long an instance may take to start on a loaded 2-core machine. */
const START_MS = 90_000;

/** Ids as half-open intervals `[start, end)` of the id line, by who handed them out. */
interface Issued {
  start: bigint;
  end: bigint;
  by: string;
}

const count = (list: readonly Issued[]) => list.reduce((n, i) => n + Number(i.end - i.start), 0);
const highest = (list: readonly Issued[]) => list.reduce((m, i) => (i.end > m ? i.end : m), 0n);

/** One incumbent server (`fixtures/incumbent-allocator.ts`): every segment it committed, as ids it may hand out. */
function allocator(kind: 'leaf' | 'tinyid', url: string, key: string, issued: Issued[], name: string) {
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', FIXTURE, kind, url, key, '30'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let rest = '';
  let segments = 0;
  proc.stdout?.on('data', (d) => {
    const lines = (rest + String(d)).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const [low, high] = line.split(' ').map(BigInt);
      segments++;
      // Leaf: ids [low, high); Tinyid: ids of (low, high].
      issued.push(
        kind === 'leaf' ? { start: low, end: high, by: name } : { start: low + 1n, end: high + 1n, by: name },
      );
    }
  });
  let stderr = '';
  proc.stderr?.on('data', (d) => (stderr += String(d)));
  return {
    /** Resolves once it committed `n` more segments (it runs, whatever the machine's load). */
    advanced: async (n: number) => {
      const from = segments;
      await waitFor(() => segments >= from + n || proc.exitCode !== null, {
        timeoutMs: 60_000,
        message: `${name} to commit ${n} segments`,
      });
      expect(proc.exitCode, stderr).toBeNull();
    },
    stop: async () => {
      proc.kill('SIGTERM');
      expect(await waitExit(proc), stderr).toBe(0);
    },
    kill9: async () => {
      proc.kill('SIGKILL');
      await waitExit(proc);
    },
  };
}

/**
 * A client of idpool taking ids in a loop from `url()` (an instance that
 * may be restarting: failures are counted and retried) until stopped.
 */
function client(url: () => string, take: (base: string) => Promise<Issued[]>, out: Issued[]) {
  let running = true;
  const after: Issued[] = [];
  let errors = 0;
  let taken = 0;
  let finishedAt: number | undefined;
  const done = (async () => {
    while (running) {
      const started = Date.now();
      try {
        const got = await take(url());
        out.push(...got);
        taken += got.length;
        if (finishedAt !== undefined && started > finishedAt) after.push(...got);
        // Up to 100 takes a second: load through the cutover without keeping a core busy for the file's length.
        await new Promise((r) => setTimeout(r, 10));
      } catch {
        errors++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  })();
  return {
    markFinished: (at: number) => (finishedAt = at),
    after,
    errors: () => errors,
    /** Resolves once it took `n` more times (it runs, whatever the machine's load). */
    took: async (n: number) => {
      const from = taken;
      await waitFor(() => taken >= from + n, { timeoutMs: 60_000, message: `a client to take ${n} more times` });
    },
    stop: async () => {
      running = false;
      await done;
    },
  };
}

const point = (id: string, by: string): Issued => {
  const n = BigInt(id);
  return { start: n, end: n + 1n, by };
};

async function leafTake(base: string, key: string): Promise<Issued[]> {
  const res = await fetch(`${base}/api/segment/get/${key}`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(text);
  return [point(text, 'idpool')];
}

async function tinyidTake(base: string, key: string): Promise<Issued[]> {
  const text = await (
    await fetch(`${base}/tinyid/id/nextIdSimple?bizType=${key}&token=${TINYID_TOKEN}&batchSize=20`)
  ).text();
  if (text === '') throw new Error('no ids');
  return text.split(',').map((id) => point(id, 'idpool'));
}

/** Tinyid's `nextSegmentIdSimple`: `currentId,loadingId,maxId,delta,remainder`, ids of (currentId, maxId] the client hands out. */
async function tinyidLease(base: string, key: string): Promise<Issued[]> {
  const text = await (await fetch(`${base}/tinyid/id/nextSegmentIdSimple?bizType=${key}&token=${TINYID_TOKEN}`)).text();
  if (text === '') throw new Error('no segment');
  const [current, , max] = text.split(',').map(BigInt);
  await new Promise((r) => setTimeout(r, 100));
  return [{ start: current + 1n, end: max + 1n, by: 'idpool lease' }];
}

/** The native take (`POST /apps/:key/ids`, the Tinyid entity's token as its secret): ids, or the failure as it came. */
async function nativeTake(base: string, key: string, n: number) {
  const res = await call<{ ids?: string[]; code?: string }>(`${base}/apps/${key}/ids`, {
    token: TINYID_TOKEN,
    body: { count: n },
  });
  return { ...res, ids: (res.body.ids ?? []).map((id) => point(id, 'idpool native')) };
}

/** Pairs of intervals sharing an id (none expected): sorted by start, each must end at or before the next starts. */
function overlaps(all: Issued[]): string[] {
  const sorted = [...all].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  const found: string[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1], sorted[i]];
    if (b.start < a.end) found.push(`${a.by} [${a.start}, ${a.end}) and ${b.by} [${b.start}, ${b.end})`);
  }
  return found;
}

/** `idpool apps import-from leaf|tinyid --live` (or `--finish`) for both, at once; each must succeed. */
async function importBoth(cli: Record<string, string>, url: string, step: string[], expected: string): Promise<void> {
  for (const run of await Promise.all(
    ['leaf', 'tinyid'].map((kind) => idpool(['apps', 'import-from', kind, ...step, '--database-url', url], cli)),
  )) {
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(expected);
  }
}

describeWithServices('live cutover from Leaf and Tinyid', { mysql: true, redis: true, privateMariadb: true }, () => {
  const schemas: TestSchema[] = [];
  const instances: Instance[] = [];
  let pgServer: PostgresServer | undefined;
  let mariadb: PrivateMariadb | undefined;
  let browser: Browser | undefined;
  /** Leaf's and Tinyid's tables on the shared MariaDB, and in a PostgreSQL of the test's own (stopped, frozen, killed). */
  let mariaIncumbent: string;
  let pgIncumbent: string;
  let mariaEnv: Record<string, string>;
  let maria: Instance[];
  let pg: Instance;

  beforeAll(async () => {
    const [own, privateMariadb, ownPg, server] = await Promise.all([
      createTestSchema('mysql'),
      startPrivateMariadb(),
      // idpool's own table of the PostgreSQL case on MariaDB: the incumbent's server goes down alone.
      createTestSchema('mysql'),
      startPostgresServer(),
    ]);
    schemas.push(own, ownPg);
    pgServer = server;
    mariadb = privateMariadb;
    const root = await createConnection({ uri: privateMariadb.url.replace(/\/idpool$/, '/') });
    await root.query('CREATE DATABASE incumbent');
    await root.end();
    const admin = new PgClient({ connectionString: server.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE incumbent');
    await admin.end();
    mariaIncumbent = privateMariadb.url.replace(/\/idpool$/, '/incumbent');
    pgIncumbent = server.url('incumbent');
    await Promise.all([incumbentTables(mariaIncumbent), incumbentTables(pgIncumbent)]);
    const env = (database: string, incumbentUrl: string) => ({
      IDPOOL_DATABASE_URL: database,
      ...sharedRedisEnv(),
      IDPOOL_COMPAT: 'leaf,tinyid',
      IDPOOL_LEAF_DATABASE_URL: incumbentUrl,
      IDPOOL_TINYID_DATABASE_URL: incumbentUrl,
    });
    mariaEnv = env(own.url, mariaIncumbent);
    const pgEnv = env(ownPg.url, pgIncumbent);
    const started = await Promise.all([
      startInstance(mariaEnv, START_MS),
      startInstance(mariaEnv, START_MS),
      startInstance(pgEnv, START_MS),
    ]);
    instances.push(...started);
    maria = started.slice(0, 2);
    pg = started[2];
  }, 180_000);

  afterAll(async () => {
    for (const i of instances) await i.stop();
    await browser?.close();
    await pgServer?.stop();
    await mariadb?.destroy();
    for (const s of schemas) await s.drop();
  });

  it('MariaDB: no id from both systems across allocators killed and stopped, clients moved one by one, an instance restarted, the incumbent frozen a while; after --finish every id is above the incumbent', async () => {
    // Leaf's and Tinyid's servers, two each, advancing their rows from before the import to the finish.
    const leafIssued: Issued[] = [];
    const tinyIssued: Issued[] = [];
    const leaf = [0, 1].map((i) => allocator('leaf', mariaIncumbent, 'orders', leafIssued, `leaf server ${i}`));
    const tiny = [0, 1].map((i) => allocator('tinyid', mariaIncumbent, 'items', tinyIssued, `tinyid server ${i}`));
    await Promise.all([...leaf, ...tiny].map((a) => a.advanced(3)));
    const cli = { IDPOOL_URL: maria[1].url, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN };
    await importBoth(cli, mariaIncumbent, ['--live'], ', live');
    const ready = await call(`${maria[0].url}/readyz`);
    expect(ready.body.checks).toMatchObject({ leaf_database: 'ok', tinyid_database: 'ok' });

    // Clients move to idpool one by one, under load.
    const leafOut: Issued[] = [];
    const tinyOut: Issued[] = [];
    const at = (i: number) => () => maria[i].url;
    const clients = [
      client(at(0), (b) => leafTake(b, 'orders'), leafOut),
      client(at(1), (b) => tinyidTake(b, 'items'), tinyOut),
      client(at(0), (b) => tinyidLease(b, 'items'), tinyOut),
    ];
    await Promise.all([clients[0].took(20), clients[1].took(20), clients[2].took(3)]);
    await leaf[0].stop();
    clients.push(client(at(1), (b) => leafTake(b, 'orders'), leafOut));
    // One Tinyid server dies mid-way (what it committed and printed counts as handed out).
    await tiny[0].kill9();
    clients.push(client(at(0), (b) => tinyidTake(b, 'items'), tinyOut));
    await Promise.all([clients[3].took(20), clients[4].took(20), leaf[1].advanced(3), tiny[1].advanced(3)]);
    // A real restart of one instance while its clients keep asking (they fail over to nothing: they retry).
    await maria[0].stop();
    maria[0] = await startInstance(mariaEnv, START_MS);
    instances.push(maria[0]);
    await Promise.all([clients[0].took(10), clients[2].took(2), clients[4].took(10), leaf[1].advanced(3)]);
    await leaf[1].stop();
    await tiny[1].stop();

    // The incumbent's MariaDB frozen (SIGSTOP: connections open, nothing answers): a lease answers 503 with
    // Retry-After within the incumbent's timeouts, never hangs; /readyz says so; thawed, all is well again.
    mariadb!.freeze();
    const asked = Date.now();
    const frozen = await call(`${maria[1].url}/apps/items/segments`, { token: TINYID_TOKEN, body: {} });
    expect(frozen.status, JSON.stringify(frozen.body)).toBe(503);
    expect(Number(frozen.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Date.now() - asked).toBeLessThan(20_000);
    const degraded = await call(`${maria[1].url}/readyz`);
    expect(degraded.body.checks.tinyid_database).not.toBe('ok');
    // Reported, not a reason to leave rotation: the fleet shares the incumbent.
    expect(degraded.status).toBe(200);
    expect(degraded.body.degraded).toContain('tinyid_database');
    mariadb!.thaw();
    await waitFor(async () => (await call(`${maria[1].url}/readyz`)).body.checks.tinyid_database === 'ok', {
      timeoutMs: 30_000,
      message: 'readiness once the incumbent thawed',
    });

    // The incumbent stopped: finish while the clients keep taking.
    await importBoth(cli, mariaIncumbent, ['--finish', '--observe-seconds', '1'], '1 moved onto idpool');
    const finishedAt = Date.now();
    for (const cl of clients) cl.markFinished(finishedAt);
    await Promise.all(clients.map((cl, i) => cl.took(i === 2 ? 2 : 10)));
    for (const cl of clients) await cl.stop();
    expect((await call(`${cli.IDPOOL_URL}/admin/live`, { token: ADMIN_TOKEN })).body.apps).toEqual([]);

    // Every id either side handed out: none twice, within or across the systems.
    expect(overlaps([...leafIssued, ...leafOut])).toEqual([]);
    expect(overlaps([...tinyIssued, ...tinyOut])).toEqual([]);
    for (const got of tinyOut)
      expect(((got.start % TINYID_DELTA) + TINYID_DELTA) % TINYID_DELTA).toBe(TINYID_REMAINDER);
    // Both systems really ran side by side (the waits above), and idpool served after the finish: above every incumbent id.
    expect(leafIssued.length).toBeGreaterThanOrEqual(12);
    expect(tinyIssued.length).toBeGreaterThanOrEqual(12);
    const [leafMax, tinyMax] = [highest(leafIssued), highest(tinyIssued)];
    // clients 0 and 3 take Leaf's entity, 1, 2 (leases) and 4 Tinyid's.
    for (const cl of clients) expect(cl.after.length).toBeGreaterThan(0);
    for (const i of [0, 3]) for (const got of clients[i].after) expect(got.start >= leafMax).toBe(true);
    for (const i of [1, 2, 4]) for (const got of clients[i].after) expect(got.start >= tinyMax).toBe(true);
    console.log(
      `live cutover (MariaDB): leaf ${leafIssued.length} incumbent segments / ${count(leafOut)} idpool ids; tinyid ${tinyIssued.length} / ${count(tinyOut)}; ${clients.flatMap((cl) => cl.after).length} takes after --finish; client errors ${clients.map((cl) => cl.errors()).join(',')}`,
    );
  }, 180_000);

  it("PostgreSQL: Leaf's and Tinyid's own SQL there; frozen or killed, live takes answer 503 with Retry-After, /readyz and idpool_dependency_up say so, and serve again once it is back; then --finish", async () => {
    const server = pgServer!;
    const base = pg.url;
    const cli = { IDPOOL_URL: base, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN };
    const leafIssued: Issued[] = [];
    const tinyIssued: Issued[] = [];
    const leaf = allocator('leaf', pgIncumbent, 'orders', leafIssued, 'leaf server');
    const tiny = allocator('tinyid', pgIncumbent, 'items', tinyIssued, 'tinyid server');
    await Promise.all([leaf.advanced(3), tiny.advanced(3)]);
    await importBoth(cli, pgIncumbent, ['--live'], ', live');
    const leafOut: Issued[] = [];
    const tinyOut: Issued[] = [];
    const clients = [
      client(
        () => base,
        (b) => leafTake(b, 'orders'),
        leafOut,
      ),
      client(
        () => base,
        (b) => tinyidTake(b, 'items'),
        tinyOut,
      ),
      client(
        () => base,
        (b) => tinyidLease(b, 'items'),
        tinyOut,
      ),
    ];
    await Promise.all([
      clients[0].took(20),
      clients[1].took(20),
      clients[2].took(3),
      leaf.advanced(3),
      tiny.advanced(3),
    ]);
    await leaf.stop();
    await tiny.stop();

    const lease = () => call(`${base}/apps/items/segments`, { token: TINYID_TOKEN, body: {} });
    const dependencyUp = async (kind: string) =>
      parseMetrics((await call<string>(`${base}/metrics`)).body).get(`idpool_dependency_up{dependency="${kind}"}`);
    const expectUnavailable = (res: { status: number; headers: Headers; body: unknown }) => {
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    };
    // Frozen (SIGSTOP: connections stay open, nothing answers): an answer within the incumbent's timeouts, never a hang.
    server.pause();
    const asked = Date.now();
    expectUnavailable(await lease());
    expect(Date.now() - asked).toBeLessThan(20_000);
    const frozen = await call(`${base}/readyz`);
    expect(frozen.status).toBe(200);
    expect(frozen.body.checks.tinyid_database).not.toBe('ok');
    expect(frozen.body.degraded).toContain('tinyid_database');
    server.resume();

    // The dashboard shows the incumbent's databases beside its sampling state.
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox'] });
    const page = await browser.newPage();
    await page.goto(`${base}/admin/ui`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login button[type=submit]');
    await expect
      .poll(() => page.textContent('#incumbents'), { timeout: 15_000 })
      .toBe('leaf database up, tinyid database up');

    // Killed: the pool's ids (reserved from the row before) go on, then every take is a 503 with Retry-After.
    await server.kill9();
    expectUnavailable(await lease());
    const drained = await waitFor(
      async () => {
        // Tinyid's entity takes up to a whole batch (100,000: its batch.size.max) at once.
        const res = await nativeTake(base, 'items', 100_000);
        if (res.status === 200) tinyOut.push(...res.ids);
        else expect(res.status, JSON.stringify(res.body)).toBe(503);
        return res.status === 503 && res;
      },
      { timeoutMs: 30_000, message: 'the pool of a live entity to run dry with its incumbent down' },
    );
    expectUnavailable(drained);
    const down = await call(`${base}/readyz`);
    expect(down.status).toBe(200);
    expect(down.body.degraded).toEqual(['leaf_database', 'tinyid_database']);
    expect(down.body.checks).toMatchObject({ database: 'ok', redis: 'ok' });
    expect(down.body.checks.leaf_database).not.toBe('ok');
    expect(down.body.checks.tinyid_database).not.toBe('ok');
    await expect.poll(() => dependencyUp('tinyid_database'), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => dependencyUp('leaf_database'), { timeout: 10_000 }).toBe(0);
    await expect
      .poll(() => page.getAttribute('#incumbents', 'data-down'), { timeout: 15_000 })
      .toBe('leaf_database,tinyid_database');
    expect(await page.getAttribute('#incumbents', 'class')).toBe('down');

    // Back: ready, the gauge at 1, and live takes served again from the row where it stood.
    await server.restart();
    await waitFor(async () => (await call(`${base}/readyz`)).body.degraded === undefined, {
      timeoutMs: 30_000,
      message: 'readiness without degraded checks once the incumbent is back',
    });
    await expect.poll(() => dependencyUp('tinyid_database'), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => dependencyUp('leaf_database'), { timeout: 10_000 }).toBe(1);
    await expect
      .poll(() => page.textContent('#incumbents'), { timeout: 15_000 })
      .toBe('leaf database up, tinyid database up');
    const back = await waitFor(
      async () => {
        const res = await nativeTake(base, 'items', 5);
        return res.status === 200 && res;
      },
      { timeoutMs: 30_000, message: 'live takes once the incumbent is back' },
    );
    tinyOut.push(...back.ids);
    await Promise.all(clients.map((cl) => cl.took(3)));

    await importBoth(cli, pgIncumbent, ['--finish', '--observe-seconds', '1'], '1 moved onto idpool');
    const finishedAt = Date.now();
    for (const cl of clients) cl.markFinished(finishedAt);
    await Promise.all(clients.map((cl, i) => cl.took(i === 2 ? 2 : 10)));
    for (const cl of clients) await cl.stop();
    expect(overlaps([...leafIssued, ...leafOut])).toEqual([]);
    expect(overlaps([...tinyIssued, ...tinyOut])).toEqual([]);
    for (const got of tinyOut)
      expect(((got.start % TINYID_DELTA) + TINYID_DELTA) % TINYID_DELTA).toBe(TINYID_REMAINDER);
    const [leafMax, tinyMax] = [highest(leafIssued), highest(tinyIssued)];
    for (const cl of clients) expect(cl.after.length).toBeGreaterThan(0);
    for (const got of clients[0].after) expect(got.start >= leafMax).toBe(true);
    for (const i of [1, 2]) for (const got of clients[i].after) expect(got.start >= tinyMax).toBe(true);
    console.log(
      `live cutover (PostgreSQL): leaf ${leafIssued.length} incumbent segments / ${count(leafOut)} idpool ids; tinyid ${tinyIssued.length} / ${count(tinyOut)}; client errors ${clients.map((cl) => cl.errors()).join(',')}`,
    );
  }, 180_000);
});
