/**
 * The in-process library: `next()` on one entity, number ids.
 *
 *   npx tsx bench/library.bench.ts        (or `npm run bench -- library`)
 *
 * 1. Throughput: 1M synchronous next() calls per event-loop turn (the turn
 *    boundary is where background reservations run, as between a server's
 *    requests). Several runs; the median is quoted, beside a bare
 *    "bump a field" loop measured the same way, as a ceiling on this machine.
 * 2. Longest single call: every call timed on its own across at least 20
 *    segment switches. maxStep is lowered to 1M here so switches come 10×
 *    more often than with the default: the stricter case for stalls.
 *
 * Runs on a SQLite file in a temp dir, and on MariaDB when reachable
 * (IDPOOL_TEST_MYSQL_URL, default mysql://root@127.0.0.1:3306/idpool_test).
 * Figures only; a benchmark asserts nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { SqlEntityStore } from '../src/entities/entity-store';
import { EntityRegistry } from '../src/entities/registry';
import { systemClock } from '../src/clock';
import { type Database, openDatabase } from '../src/db/database';
import { type IdGenerator, SegmentsNotReadyError } from '../src/library';
import { createIdGeneratorWith } from '../src/library/generator';
import type { Segment, SegmentAllocator } from '../src/segment/allocator';
import { SqlSegmentAllocator } from '../src/segment/allocator';

const CHUNK = 1_000_000;
const RUNS = 7;
const IDS_PER_RUN = 50_000_000;
const MIN_SWITCHES = 20;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
};
const fmt = (perSecond: number) => `${(perSecond / 1e6).toFixed(1)}M/s`;

/** Counts reservations and remembers where each segment starts (cluster count 1: the first id). */
class CountingAllocator implements SegmentAllocator {
  reservations = 0;
  readonly starts = new Set<number>();
  constructor(private readonly inner: SegmentAllocator) {}
  async reserve(key: string, size: number): Promise<Segment> {
    const segment = await this.inner.reserve(key, size);
    this.reservations++;
    this.starts.add(Number(segment.start));
    return segment;
  }
  peek(key: string) {
    return this.inner.peek(key);
  }
  peekMany(keys: readonly string[]) {
    return this.inner.peekMany(keys);
  }
}

/** The ceiling: the cheapest possible "next id" (a field bump behind a key check), same loop shape. */
class Bare {
  private value = 0;
  private readonly key = 'orders';
  next(key: string): number {
    if (key !== this.key) throw new Error('unknown');
    return this.value++;
  }
}

interface Run {
  perSecond: number;
  /** Ids per second of CPU time this process got: what descheduling by other processes does not distort. */
  perCpuSecond: number;
  notReady: number;
  sink: number;
}

// Two copies of one loop, so each call site sees one receiver type (a
// shared loop would be polymorphic and slow both down).
async function throughput(gen: IdGenerator<number>, key: string): Promise<Run> {
  let sink = 0;
  let notReady = 0;
  let drawn = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  while (drawn < IDS_PER_RUN) {
    try {
      for (let i = 0; i < CHUNK; i++) sink += gen.next(key);
      drawn += CHUNK;
    } catch (err) {
      if (!(err instanceof SegmentsNotReadyError)) throw err;
      notReady++;
    }
    await turn();
  }
  return {
    perSecond: drawn / ((performance.now() - t0) / 1000),
    perCpuSecond: drawn / cpuSeconds(cpu0),
    notReady,
    sink,
  };
}

async function throughputBare(bare: Bare, key: string): Promise<Run> {
  let sink = 0;
  let drawn = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  while (drawn < IDS_PER_RUN) {
    for (let i = 0; i < CHUNK; i++) sink += bare.next(key);
    drawn += CHUNK;
    await turn();
  }
  return {
    perSecond: drawn / ((performance.now() - t0) / 1000),
    perCpuSecond: drawn / cpuSeconds(cpu0),
    notReady: 0,
    sink,
  };
}

interface Latency {
  /** Longest call of all. */
  maxMs: number;
  /** Longest of the calls that switched to a new segment (returned its first id). */
  maxSwitchMs: number;
  over1ms: number;
  calls: number;
  switches: number;
  notReady: number;
}

/**
 * Times every call on its own. On a loaded machine the longest call of all
 * mostly measures the process being descheduled; the switch calls are the
 * ones that would have waited on SQL if anything did. The bare loop timed the
 * same way shows what descheduling alone costs.
 */
async function longestCall(
  next: () => number,
  counter: CountingAllocator | undefined,
  minCalls: number,
): Promise<Latency> {
  const start = counter?.reservations ?? 0;
  const r: Latency = { maxMs: 0, maxSwitchMs: 0, over1ms: 0, calls: 0, switches: 0, notReady: 0 };
  let last = -1;
  const enough = () =>
    counter ? counter.reservations - start > MIN_SWITCHES && r.calls >= minCalls : r.calls >= minCalls;
  while (!enough()) {
    for (let i = 0; i < 10_000; i++) {
      const t0 = performance.now();
      let id: number;
      try {
        id = next();
      } catch (err) {
        if (!(err instanceof SegmentsNotReadyError)) throw err;
        r.notReady++;
        break;
      }
      const ms = performance.now() - t0;
      if (ms > r.maxMs) r.maxMs = ms;
      if (ms >= 1) r.over1ms++;
      if (counter?.starts.has(id)) {
        r.switches++;
        if (ms > r.maxSwitchMs) r.maxSwitchMs = ms;
      }
      if (id <= last) throw new Error(`order broken: ${id} after ${last}`);
      last = id;
      r.calls++;
    }
    await turn();
  }
  return r;
}

async function registerEntity(db: Database, key: string): Promise<void> {
  await new EntityRegistry(new SqlEntityStore(db), systemClock).register({ key, mode: 'monotonic' });
}

async function benchOn(label: string, db: Database): Promise<void> {
  await registerEntity(db, 'orders');
  await registerEntity(db, 'switchy');
  const counter = new CountingAllocator(new SqlSegmentAllocator(db));
  const gen = await createIdGeneratorWith({ database: db, allocator: counter, ids: 'number' });
  await gen.open('orders');
  const bare = new Bare();

  await throughput(gen, 'orders'); // warm-up: JIT, and the step grows to its working size
  await throughputBare(bare, 'orders');
  const lib: Run[] = [];
  const ceiling: Run[] = [];
  for (let run = 0; run < RUNS; run++) {
    lib.push(await throughput(gen, 'orders'));
    ceiling.push(await throughputBare(bare, 'orders'));
  }
  const wall = lib.map((r) => r.perSecond);
  const cpu = lib.map((r) => r.perCpuSecond);
  const ratios = lib.map((r, i) => r.perCpuSecond / ceiling[i].perCpuSecond);
  console.log(
    `[${label}] next(), number ids, ${RUNS} runs of ${IDS_PER_RUN / 1e6}M: median ${fmt(median(wall))} wall clock (min ${fmt(Math.min(...wall))}, max ${fmt(Math.max(...wall))}); median ${fmt(median(cpu))} per CPU-second`,
  );
  console.log(
    `[${label}] bare field bump, same loop: median ${fmt(median(ceiling.map((r) => r.perSecond)))} wall, ${fmt(median(ceiling.map((r) => r.perCpuSecond)))} per CPU-second; library/bare median ratio ${median(ratios).toFixed(2)}`,
  );
  console.log(
    `[${label}] "not ready" during throughput runs: ${lib.reduce((n, r) => n + r.notReady, 0)}; reservations so far: ${counter.reservations}`,
  );

  const switchy = await createIdGeneratorWith({ database: db, allocator: counter, ids: 'number', maxStep: 1_000_000 });
  await switchy.open('switchy');
  const bareTimed = new Bare();
  await longestCall(() => switchy.next('switchy'), counter, 0); // warm-up, and the step reaches maxStep
  const lat = await longestCall(() => switchy.next('switchy'), counter, 0);
  const base = await longestCall(() => bareTimed.next('orders'), undefined, lat.calls);
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  console.log(
    `[${label}] per-call timing over ${(lat.calls / 1e6).toFixed(1)}M calls, ${lat.switches} segment switches (maxStep 1M):`,
  );
  console.log(
    `[${label}]   longest switch call ${us(lat.maxSwitchMs)}; longest call of all ${us(lat.maxMs)}, ${lat.over1ms} calls ≥ 1 ms; "not ready": ${lat.notReady}`,
  );
  console.log(
    `[${label}]   bare loop timed the same way: longest ${us(base.maxMs)}, ${base.over1ms} calls ≥ 1 ms (descheduling by other processes)`,
  );
  await switchy.close();
  await gen.close();
}

async function main(): Promise<void> {
  console.log(
    `node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((x: number) => x.toFixed(1))
      .join(' ')}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'idpool-bench-lib-'));
  try {
    const db = await openDatabase(`sqlite:${join(dir, 'bench.db')}`);
    await benchOn('sqlite', db);
    await db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const mysqlUrl = process.env.IDPOOL_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/idpool_test';
  const server = new URL(mysqlUrl);
  server.pathname = '/';
  let admin;
  try {
    admin = await createConnection({ uri: server.toString(), connectTimeout: 2000 });
  } catch {
    console.log(`[mariadb] ${server.host} unreachable: skipped`);
    return;
  }
  const schema = `idpool_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE \`${schema}\``);
  try {
    const u = new URL(mysqlUrl);
    u.pathname = `/${schema}`;
    const db = await openDatabase(u.toString());
    await benchOn('mariadb', db);
    await db.close();
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS \`${schema}\``);
    await admin.end();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
