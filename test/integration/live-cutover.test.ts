import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { afterAll, expect, it } from 'vitest';
import { idpool } from '../support/cli';
import { ADMIN_TOKEN, call } from '../support/http';
import { type Instance, startInstance, waitExit } from '../support/processes';
import { type TestSchema, createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const FIXTURE = join(__dirname, 'fixtures', 'incumbent-allocator.ts');
const TOKEN = 'live-cutover-token-0123456789';
const TINYID_DELTA = 2n;
const TINYID_REMAINDER = 1n;

/** Ids as half-open intervals `[start, end)` of the id line, by who handed them out. */
interface Issued {
  start: bigint;
  end: bigint;
  by: string;
}

/** One incumbent server (`fixtures/incumbent-allocator.ts`): every segment it committed, as ids it may hand out. */
function allocator(kind: 'leaf' | 'tinyid', url: string, key: string, issued: Issued[], name: string) {
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', FIXTURE, kind, url, key, '30'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let rest = '';
  proc.stdout?.on('data', (d) => {
    const lines = (rest + String(d)).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const [low, high] = line.split(' ').map(BigInt);
      // Leaf: ids [low, high); Tinyid: ids of (low, high].
      issued.push(
        kind === 'leaf' ? { start: low, end: high, by: name } : { start: low + 1n, end: high + 1n, by: name },
      );
    }
  });
  let stderr = '';
  proc.stderr?.on('data', (d) => (stderr += String(d)));
  return {
    stderr: () => stderr,
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
  let finishedAt: number | undefined;
  const done = (async () => {
    while (running) {
      const started = Date.now();
      try {
        const got = await take(url());
        out.push(...got);
        if (finishedAt !== undefined && started > finishedAt) after.push(...got);
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
  const text = await (await fetch(`${base}/tinyid/id/nextIdSimple?bizType=${key}&token=${TOKEN}&batchSize=20`)).text();
  if (text === '') throw new Error('no ids');
  return text.split(',').map((id) => point(id, 'idpool'));
}

/** Tinyid's `nextSegmentIdSimple`: `currentId,loadingId,maxId,delta,remainder`, ids of (currentId, maxId] the client hands out. */
async function tinyidLease(base: string, key: string): Promise<Issued[]> {
  const text = await (await fetch(`${base}/tinyid/id/nextSegmentIdSimple?bizType=${key}&token=${TOKEN}`)).text();
  if (text === '') throw new Error('no segment');
  const [current, , max] = text.split(',').map(BigInt);
  await new Promise((r) => setTimeout(r, 100));
  return [{ start: current + 1n, end: max + 1n, by: 'idpool lease' }];
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

describeWithServices('live cutover from Leaf and Tinyid (MariaDB)', { mysql: true, redis: true }, () => {
  let own: TestSchema;
  let incumbent: TestSchema;
  const instances: Instance[] = [];

  afterAll(async () => {
    for (const i of instances) await i.stop();
    await own?.drop();
    await incumbent?.drop();
  });

  it('no id from both systems across allocators killed and stopped, clients moved one by one, an instance restarted; after --finish every id is above the incumbent', async () => {
    own = await createTestSchema('mysql');
    incumbent = await createTestSchema('mysql');
    const c = await createConnection({ uri: incumbent.url });
    await c.query(
      `CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '', max_id bigint(20) NOT NULL DEFAULT '1', step int(11) NOT NULL,
       description varchar(256) DEFAULT NULL, update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, PRIMARY KEY (biz_tag))`,
    );
    await c.query(
      `CREATE TABLE tiny_id_info (id bigint(20) NOT NULL AUTO_INCREMENT, biz_type varchar(63) NOT NULL DEFAULT '', begin_id bigint(20) NOT NULL DEFAULT '0',
       max_id bigint(20) NOT NULL DEFAULT '0', step int(11) DEFAULT '0', delta int(11) NOT NULL DEFAULT '1', remainder int(11) NOT NULL DEFAULT '0',
       create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00', update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
       version bigint(20) NOT NULL DEFAULT '0', PRIMARY KEY (id), UNIQUE KEY uniq_biz_type (biz_type))`,
    );
    await c.query(
      `CREATE TABLE tiny_id_token (id int(11) unsigned NOT NULL AUTO_INCREMENT, token varchar(255) NOT NULL DEFAULT '', biz_type varchar(63) NOT NULL DEFAULT '',
       remark varchar(255) NOT NULL DEFAULT '', create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
       update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00', PRIMARY KEY (id))`,
    );
    await c.query("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('orders', 1, 100)");
    await c.query(
      "INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES ('items', 1, 1, 100, 2, 1, 0)",
    );
    await c.query('INSERT INTO tiny_id_token (token, biz_type) VALUES (?, ?)', [TOKEN, 'items']);
    await c.end();

    const env = {
      IDPOOL_DATABASE_URL: own.url,
      ...sharedRedisEnv(),
      IDPOOL_COMPAT: 'leaf,tinyid',
      IDPOOL_LEAF_DATABASE_URL: incumbent.url,
      IDPOOL_TINYID_DATABASE_URL: incumbent.url,
    };
    instances.push(...(await Promise.all([startInstance(env, 90_000), startInstance(env, 90_000)])));

    // Leaf's and Tinyid's servers, two each, advancing their rows from before the import to the finish.
    const leafIssued: Issued[] = [];
    const tinyIssued: Issued[] = [];
    const leaf = [0, 1].map((i) => allocator('leaf', incumbent.url, 'orders', leafIssued, `leaf server ${i}`));
    const tiny = [0, 1].map((i) => allocator('tinyid', incumbent.url, 'items', tinyIssued, `tinyid server ${i}`));
    await new Promise((r) => setTimeout(r, 500));
    const cli = { IDPOOL_URL: instances[1].url, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN };
    for (const run of await Promise.all(
      ['leaf', 'tinyid'].map((kind) =>
        idpool(['apps', 'import-from', kind, '--live', '--database-url', incumbent.url], cli),
      ),
    )) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(', live');
    }
    const ready = await call(`${instances[0].url}/readyz`);
    expect(ready.body.checks).toMatchObject({ leaf_database: 'ok', tinyid_database: 'ok' });

    // Clients move to idpool one by one, under load.
    const leafOut: Issued[] = [];
    const tinyOut: Issued[] = [];
    const at = (i: number) => () => instances[i].url;
    const clients = [
      client(at(0), (b) => leafTake(b, 'orders'), leafOut),
      client(at(1), (b) => tinyidTake(b, 'items'), tinyOut),
      client(at(0), (b) => tinyidLease(b, 'items'), tinyOut),
    ];
    await new Promise((r) => setTimeout(r, 1500));
    await leaf[0].stop();
    clients.push(client(at(1), (b) => leafTake(b, 'orders'), leafOut));
    // One Tinyid server dies mid-way (what it committed and printed counts as handed out).
    await tiny[0].kill9();
    clients.push(client(at(0), (b) => tinyidTake(b, 'items'), tinyOut));
    await new Promise((r) => setTimeout(r, 1000));
    // A real restart of one instance while its clients keep asking.
    await instances[0].stop();
    instances[0] = await startInstance(env, 90_000);
    await new Promise((r) => setTimeout(r, 1000));
    await leaf[1].stop();
    await tiny[1].stop();
    await new Promise((r) => setTimeout(r, 500));

    // The incumbent stopped: finish while the clients keep taking.
    for (const run of await Promise.all(
      ['leaf', 'tinyid'].map((kind) =>
        idpool(
          ['apps', 'import-from', kind, '--finish', '--observe-seconds', '1', '--database-url', incumbent.url],
          cli,
        ),
      ),
    )) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('1 moved onto idpool');
    }
    const finishedAt = Date.now();
    for (const cl of clients) cl.markFinished(finishedAt);
    await new Promise((r) => setTimeout(r, 1500));
    for (const cl of clients) await cl.stop();
    expect((await call(`${cli.IDPOOL_URL}/admin/live`, { token: ADMIN_TOKEN })).body.apps).toEqual([]);

    // Every id either side handed out: none twice, within or across the systems.
    expect(overlaps([...leafIssued, ...leafOut])).toEqual([]);
    expect(overlaps([...tinyIssued, ...tinyOut])).toEqual([]);
    for (const got of tinyOut)
      expect(((got.start % TINYID_DELTA) + TINYID_DELTA) % TINYID_DELTA).toBe(TINYID_REMAINDER);
    // Both systems really ran side by side, and idpool served after the finish.
    const count = (list: Issued[]) => list.reduce((n, i) => n + Number(i.end - i.start), 0);
    expect(leafIssued.length).toBeGreaterThan(20);
    expect(tinyIssued.length).toBeGreaterThan(20);
    expect(count(leafOut)).toBeGreaterThan(100);
    expect(count(tinyOut)).toBeGreaterThan(100);
    const after = clients.flatMap((cl) => cl.after);
    expect(after.length).toBeGreaterThan(10);
    const leafMax = leafIssued.reduce((m, i) => (i.end > m ? i.end : m), 0n);
    const tinyMax = tinyIssued.reduce((m, i) => (i.end > m ? i.end : m), 0n);
    // clients 0 and 3 take Leaf's entity, 1, 2 (leases) and 4 Tinyid's.
    for (const i of [0, 3]) for (const got of clients[i].after) expect(got.start >= leafMax).toBe(true);
    for (const i of [1, 2, 4]) for (const got of clients[i].after) expect(got.start >= tinyMax).toBe(true);
    console.log(
      `live cutover: leaf ${leafIssued.length} incumbent segments / ${count(leafOut)} idpool ids; tinyid ${tinyIssued.length} / ${count(tinyOut)}; ${after.length} takes after --finish; client errors ${clients.map((cl) => cl.errors()).join(',')}`,
    );
  }, 300_000);
});
