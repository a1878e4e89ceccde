import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import Redis from 'ioredis';
import { describe, expect, it } from 'vitest';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { systemClock } from '../../src/clock';
import { NotFoundError, UnavailableError } from '../../src/errors';
import { type Database, openDatabase } from '../../src/db/database';
import {
  InvalidOptionError,
  SegmentsNotReadyError,
  UnsupportedEntityError,
  createIdGenerator,
} from '../../src/library';
import { createIdGeneratorWith } from '../../src/library/generator';
import { type Segment, type SegmentAllocator, SqlSegmentAllocator } from '../../src/segment/allocator';
import { call, register, takeIds } from '../support/http';
import { startFront } from '../support/front';
import { startInstance } from '../support/processes';
import { REDIS_URL, SQL_SERVERS, clearPrefix, createTestSchema, testPrefix, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { suiteDir } from '../support/temp-dir';

/** A small pool and step for an entity the service and the library share: the service reserves again and again while the library does too. */
const BUSY_POOL = {
  mode: 'monotonic',
  step: 20,
  maxPoolSize: 100,
  minSizePercent: 50,
  maxSizePerTimes: 20,
  maxSizePerSecond: 0,
};

const WORKER = join(__dirname, 'fixtures', 'library-worker.ts');

interface Worker {
  proc: ChildProcess;
  /** Ids printed so far (each line is one batch, complete lines only). */
  ids: number[];
  ready: Promise<void>;
  exited: Promise<number | null>;
  go(): void;
  output(): string;
}

function startWorker(databaseUrl: string, entityKey: string, count: number, maxStep = 5000): Worker {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', WORKER, databaseUrl, entityKey, String(count), String(maxStep)],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const ids: number[] = [];
  let out = '';
  let pending = '';
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  proc.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line === 'ready') markReady();
      else if (line.startsWith('ids ')) for (const id of line.slice(4).split(',')) ids.push(Number(id));
      else out += `${line}\n`;
    }
  });
  proc.stderr.on('data', (d) => (out += String(d)));
  // 'close', not 'exit': only then has every line the process wrote been read.
  const exited = new Promise<number | null>((resolve) => proc.once('close', (code) => resolve(code)));
  return {
    proc,
    ids,
    ready: Promise.race([ready, exited.then(() => Promise.reject(new Error(`worker exited before ready:\n${out}`)))]),
    exited,
    go: () => proc.stdin.write('go\n'),
    output: () => out,
  };
}

/** Runs `processes` workers on one entity at once (released together) and returns each one's ids. */
async function drawFromProcesses(
  databaseUrl: string,
  entityKey: string,
  processes: number,
  count: number,
  maxStep?: number,
): Promise<number[][]> {
  const workers = Array.from({ length: processes }, () => startWorker(databaseUrl, entityKey, count, maxStep));
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.go();
  const codes = await Promise.all(workers.map((w) => w.exited));
  codes.forEach((code, i) => expect(code, workers[i].output()).toBe(0));
  return workers.map((w) => w.ids);
}

function expectStrictlyIncreasing(ids: number[]) {
  for (let i = 1; i < ids.length; i++)
    if (!(ids[i] > ids[i - 1])) throw new Error(`not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
}

/** Every id once, and the processes really drew side by side (their ranges overlap). */
function expectDisjointAndInterleaved(perProcess: number[][], count: number) {
  for (const ids of perProcess) {
    expect(ids).toHaveLength(count);
    expectStrictlyIncreasing(ids);
  }
  const all = perProcess.flat();
  expect(new Set(all).size).toBe(all.length);
  const spans = perProcess.map((ids) => [ids[0], ids[ids.length - 1]]);
  for (let i = 1; i < spans.length; i++) {
    expect(spans[i][0] < spans[0][1] && spans[0][0] < spans[i][1], `process ${i} ran beside process 0`).toBe(true);
  }
}

async function registerEntity(db: Database, key: string, extra: Record<string, unknown> = {}) {
  await new EntityRegistry(new SqlEntityStore(db), systemClock).register({ key, mode: 'monotonic', ...extra } as never);
}

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(`library: several processes on one entity (${name})`, { [server]: true }, () => {
    it('4 processes draw disjoint ids, each in increasing order', async () => {
      const schema = await createTestSchema(server);
      try {
        const db = await openDatabase(schema.url);
        await registerEntity(db, 'orders', { step: 100 });
        await db.close();
        // 4 × 20 000 ids in segments of 100..1600: well over a hundred reservations racing.
        const perProcess = await drawFromProcesses(schema.url, 'orders', 4, 20_000, 1600);
        expectDisjointAndInterleaved(perProcess, 20_000);
      } finally {
        await schema.drop();
      }
    });
  });
}

describe('library: several processes on one entity', () => {
  describe('SQLite', () => {
    const dir = suiteDir('idpool-lib-');

    it('2 processes on one file draw disjoint ids, each in increasing order', async () => {
      const url = dir.sqliteUrl('two.db');
      const db = await openDatabase(url);
      await registerEntity(db, 'orders', { step: 100 });
      await db.close();
      const perProcess = await drawFromProcesses(url, 'orders', 2, 30_000, 1600);
      expectDisjointAndInterleaved(perProcess, 30_000);
    });

    it('a process killed with -9 and started again repeats no id', async () => {
      const url = dir.sqliteUrl('kill.db');
      const db = await openDatabase(url);
      await registerEntity(db, 'orders', { step: 50 });
      await db.close();
      const seen: number[] = [];
      for (let run = 0; run < 3; run++) {
        const w = startWorker(url, 'orders', 1_000_000, 800);
        await w.ready;
        w.go();
        // Kill mid-way, at a different point each run.
        const target = 2000 + run * 3000;
        const deadline = Date.now() + 30_000;
        while (w.ids.length < target && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        w.proc.kill('SIGKILL');
        await w.exited;
        expect(w.ids.length, w.output()).toBeGreaterThanOrEqual(target);
        expectStrictlyIncreasing(w.ids);
        seen.push(...w.ids);
      }
      expect(new Set(seen).size).toBe(seen.length);
    });

    it('slow reservations on a real file: next() serves the prefetched segment, waiters get a typed error in time, nothing repeats', async () => {
      const url = dir.sqliteUrl('slow.db');
      const db = await openDatabase(url);
      await registerEntity(db, 'orders', { step: 500 });
      const sql = new SqlSegmentAllocator(db);
      let delayMs = 0;
      const slow: SegmentAllocator = {
        async reserve(key: string, size: number): Promise<Segment> {
          if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
          return sql.reserve(key, size);
        },
        peek: (key: string) => sql.peek(key),
        peekMany: (keys: readonly string[]) => sql.peekMany(keys),
      };
      const gen = await createIdGeneratorWith({
        database: db,
        allocator: slow,
        ids: 'number',
        maxStep: 500,
        waitMs: 100,
      });
      await gen.open('orders');
      const ids = await gen.take('orders', 60);
      await new Promise((r) => setTimeout(r, 50)); // segment 2 prefetched at full speed
      delayMs = 600;
      const t0 = performance.now();
      ids.push(...(await gen.take('orders', 940))); // rest of segment 1, all of segment 2 (segment 3 is slow)
      expect(performance.now() - t0).toBeLessThan(300);
      expect(() => gen.next('orders')).toThrow(SegmentsNotReadyError);
      await expect(gen.nextAsync('orders')).rejects.toBeInstanceOf(SegmentsNotReadyError);
      await new Promise((r) => setTimeout(r, 700));
      delayMs = 0;
      ids.push(...(await gen.take('orders', 1000)));
      expect(new Set(ids).size).toBe(ids.length);
      expectStrictlyIncreasing(ids);
      // Every id handed out lies below what the file says was reserved.
      expect(BigInt(ids[ids.length - 1]) < (await sql.peek('orders'))).toBe(true);
      await gen.close();
      await db.close();
    });
  });
});

describe('library on the embedded default (SQLite file)', () => {
  const dir = suiteDir('idpool-lib-embedded-');

  it('a file the service never ran on: a clear UnavailableError, or the schema with migrate: true', async () => {
    const url = dir.sqliteUrl('fresh.db');
    const err = await createIdGenerator({ databaseUrl: url }).catch((e) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.message).toContain('no application table');
    const gen = await createIdGenerator({ databaseUrl: url, migrate: true });
    await expect(gen.nextAsync('orders')).rejects.toBeInstanceOf(NotFoundError);
    await gen.close();
  });

  it('the library and the embedded service (SQLite + in-process pool) share an entity without collisions', async () => {
    const url = dir.sqliteUrl('service.db');
    const instance = await startInstance({
      IDPOOL_DATABASE_URL: url,
      IDPOOL_REDIS_URL: '',
      IDPOOL_REFILL_INTERVAL_MS: '20',
    });
    try {
      expect(instance.output()).toContain('in-process');
      const secret = await register(instance.url, { key: 'orders', ...BUSY_POOL });
      const gen = await createIdGenerator({ databaseUrl: url, ids: 'number', maxStep: 400, targetSegmentMs: 20 });
      const fromHttp: number[] = [];
      const fromLibrary: number[] = [];
      await Promise.all([
        (async () => {
          while (fromHttp.length < 2000) {
            const res = await takeIds(instance.url, 'orders', secret, 20);
            if (res.status === 503) continue;
            expect(res.status, JSON.stringify(res.body)).toBe(200);
            for (const id of res.body.ids) fromHttp.push(Number(id));
          }
        })(),
        (async () => {
          while (fromLibrary.length < 2000) {
            fromLibrary.push(...(await gen.take('orders', 9)));
            await new Promise((r) => setTimeout(r, 0));
          }
        })(),
      ]);
      await gen.close();
      const all = [...fromHttp, ...fromLibrary];
      expect(new Set(all).size).toBe(all.length);
      expectStrictlyIncreasing(fromLibrary);
      expect(Math.min(...fromHttp) < Math.max(...fromLibrary) && Math.min(...fromLibrary) < Math.max(...fromHttp)).toBe(
        true,
      );
    } finally {
      await instance.stop();
    }
  });
  it('a gapless series in service mode: a reference kept in the ledger, one key through a dropped answer; the database mode refuses it', async () => {
    const url = dir.sqliteUrl('gapless.db');
    const instance = await startInstance({ IDPOOL_DATABASE_URL: url, IDPOOL_REDIS_URL: '' });
    // The first attempt of each Idempotency-Key reaches the instance, which issues; its answer is cut on the way back.
    const cut = new Set<string>();
    const front = await startFront(instance.url, ({ idempotencyKey: k }) =>
      k === undefined || cut.has(k) ? { kind: 'forward' } : (cut.add(k), { kind: 'forward', drop: true }),
    );
    try {
      const key = 'invoices';
      const secret = await register(instance.url, { key, format: 'FA{yyyy}-{seq:6}', gapless: true });
      const gen = await createIdGenerator({ service: { url: [front.url, instance.url], secrets: { [key]: secret } } });
      let first: string[];
      let second: string[];
      try {
        first = await gen.numbers(key, 3, { reference: 'order-1' });
        second = await gen.numbers(key, 1, { reference: 'order-2', idempotencyKey: 'order-2' });
        expect(await gen.numbers(key, 1, { reference: 'order-2', idempotencyKey: 'order-2' })).toEqual(second);
      } finally {
        await gen.close();
      }
      expect(cut.size).toBe(1);
      const year = first[0].slice(2, 6);
      expect([...first, ...second]).toEqual([1, 2, 3, 4].map((n) => `FA${year}-00000${n}`));
      // The ledger holds what the generator was answered, each with its reference: the cut answer's retry burned none.
      const ledger = await call(`${instance.url}/apps/${key}/numbers`, { token: secret });
      expect(ledger.body.numbers.map((r: { number: string; reference: string }) => [r.number, r.reference])).toEqual([
        ...first.map((n) => [n, 'order-1']),
        [second[0], 'order-2'],
      ]);
      // With its own database connection the library writes no ledger: it refuses, naming the service mode.
      const local = await createIdGenerator({ databaseUrl: url });
      try {
        const refused = await local.numbers(key, 1).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(UnsupportedEntityError);
        expect((refused as Error).message).toMatch(/gapless series.*service mode/);
        await expect(local.numbers(key, 1, { reference: 'order-3' })).rejects.toBeInstanceOf(InvalidOptionError);
      } finally {
        await local.close();
      }
    } finally {
      await front.close();
      await instance.stop();
    }
  });
});

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(
    `library and the Redis service share an entity (${name})`,
    { [server]: true, redis: true },
    () => {
      it('ids drawn by the library and through HTTP never collide', async () => {
        const schema = await createTestSchema(server);
        const key = `shared-${Math.random().toString(36).slice(2, 10)}`;
        const prefix = testPrefix();
        const instance = await startInstance({
          IDPOOL_DATABASE_URL: schema.url,
          ...sharedRedisEnv(prefix),
          IDPOOL_REFILL_INTERVAL_MS: '20',
        });
        const gen = await createIdGenerator({ databaseUrl: schema.url, maxStep: 400, targetSegmentMs: 20 });
        try {
          const secret = await register(instance.url, { key, ...BUSY_POOL });
          const fromHttp: bigint[] = [];
          const fromLibrary: bigint[] = [];
          const httpSide = (async () => {
            while (fromHttp.length < 3000) {
              const res = await takeIds(instance.url, key, secret, 20);
              if (res.status === 503) continue;
              expect(res.status, JSON.stringify(res.body)).toBe(200);
              for (const id of res.body.ids) fromHttp.push(BigInt(id));
            }
          })();
          const librarySide = (async () => {
            while (fromLibrary.length < 3000) {
              fromLibrary.push(...(await gen.take(key, 7)));
              fromLibrary.push(await gen.nextAsync(key));
              await new Promise((r) => setTimeout(r, 0));
            }
          })();
          await Promise.all([httpSide, librarySide]);
          const all = [...fromHttp, ...fromLibrary].map(String);
          expect(new Set(all).size).toBe(all.length);
          for (let i = 1; i < fromLibrary.length; i++) expect(fromLibrary[i] > fromLibrary[i - 1]).toBe(true);
          // Both sides reserved while the other did: their ranges overlap.
          const lo = (ids: bigint[]) => ids.reduce((a, b) => (b < a ? b : a));
          const hi = (ids: bigint[]) => ids.reduce((a, b) => (b > a ? b : a));
          expect(lo(fromHttp) < hi(fromLibrary) && lo(fromLibrary) < hi(fromHttp)).toBe(true);
        } finally {
          await gen.close();
          await instance.stop();
          await schema.drop();
          const redis = new Redis(REDIS_URL);
          await clearPrefix(redis, prefix);
          redis.disconnect();
        }
      });
    },
  );
}
