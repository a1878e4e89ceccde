/**
 * Segment reservations straight against each database: how many
 * `SqlSegmentAllocator.reserve` calls per second, and their p99, with 1 and
 * 8 reservers on one entity (the contended row is the point: every refill of
 * a hot entity reserves on it).
 *
 *   npx tsx bench/reserve.bench.ts        (or `npm run bench -- reserve`)
 *
 * - MariaDB and PostgreSQL: one process, N async loops over the driver's
 *   connection pool (10 connections), as the service reserves.
 * - SQLite: N separate processes on one file. better-sqlite3 is synchronous,
 *   so loops in one process would only take turns; concurrency on SQLite is
 *   several processes (the library in several workers) sharing the file.
 *
 * Each cell runs WARMUP_MS, then MEASURE_MS; latency is one reserve() call as
 * its caller sees it. Fresh schema/database/file per database (IDPOOL_TEST_*
 * URLs); a server that does not answer is reported and skipped.
 * Figures only; a benchmark asserts nothing.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SqlEntityStore } from '../src/entities/entity-store';
import { EntityRegistry } from '../src/entities/registry';
import { systemClock } from '../src/clock';
import { openDatabase } from '../src/db/database';
import { SqlSegmentAllocator } from '../src/segment/allocator';
import {
  type SqlServer,
  type TestSchema,
  createTestSchema,
  mysqlReachable,
  postgresReachable,
} from '../test/support/services';

const KEY = 'orders';
/** One default step (docs/design.md): what a refill of a default entity reserves at a time. */
const SEGMENT = 1000;
const WARMUP_MS = 1000;
const MEASURE_MS = 4000;
const CONCURRENCY = [1, 8];

interface Cell {
  reservations: number;
  seconds: number;
  latenciesMs: number[];
}

/** `loops` reservers on one entity; latencies of the calls that started after the warm-up. */
async function reserveLoops(url: string, loops: number): Promise<Cell> {
  const db = await openDatabase(url, { migrate: false });
  const allocator = new SqlSegmentAllocator(db);
  const start = performance.now();
  const measureFrom = start + WARMUP_MS;
  const until = measureFrom + MEASURE_MS;
  const latenciesMs: number[] = [];
  await Promise.all(
    Array.from({ length: loops }, async () => {
      for (;;) {
        const t0 = performance.now();
        if (t0 >= until) return;
        await allocator.reserve(KEY, SEGMENT);
        if (t0 >= measureFrom) latenciesMs.push(performance.now() - t0);
      }
    }),
  );
  await db.close();
  return { reservations: latenciesMs.length, seconds: MEASURE_MS / 1000, latenciesMs };
}

const run = promisify(execFile);

/** SQLite: `processes` child processes of this file, one reserver each, started together. */
async function reserveFromProcesses(url: string, processes: number): Promise<Cell> {
  const outputs = await Promise.all(
    Array.from({ length: processes }, () =>
      run(process.execPath, ['--import', 'tsx', __filename, '--child', url], { maxBuffer: 64 << 20 }),
    ),
  );
  const cells = outputs.map((o) => JSON.parse(o.stdout) as Cell);
  return {
    reservations: cells.reduce((n, c) => n + c.reservations, 0),
    seconds: MEASURE_MS / 1000,
    latenciesMs: cells.flatMap((c) => c.latenciesMs),
  };
}

function p99(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? NaN;
}

async function prepare(url: string): Promise<void> {
  const db = await openDatabase(url);
  await new EntityRegistry(new SqlEntityStore(db), systemClock).register({ key: KEY, mode: 'monotonic' });
  await db.close();
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') {
    process.stdout.write(JSON.stringify(await reserveLoops(process.argv[3], 1)));
    return;
  }
  const rows: string[][] = [['database', 'reservers', 'reservations/s', 'p99 ms']];
  const servers: { name: string; server: SqlServer; reachable: () => Promise<boolean> }[] = [
    { name: 'MariaDB', server: 'mysql', reachable: mysqlReachable },
    { name: 'PostgreSQL', server: 'postgres', reachable: postgresReachable },
  ];
  for (const { name, server, reachable } of servers) {
    if (!(await reachable())) {
      rows.push([name, '-', 'unreachable', '-']);
      continue;
    }
    for (const n of CONCURRENCY) {
      // A fresh schema per cell: the contended row starts at the same size and cold.
      const schema: TestSchema = await createTestSchema(server);
      try {
        await prepare(schema.url);
        const cell = await reserveLoops(schema.url, n);
        rows.push([
          name,
          `${n} (async loops, 1 process)`,
          (cell.reservations / cell.seconds).toFixed(0),
          p99(cell.latenciesMs).toFixed(2),
        ]);
      } finally {
        await schema.drop();
      }
    }
  }
  for (const n of CONCURRENCY) {
    const dir = mkdtempSync(join(tmpdir(), 'idpool-bench-reserve-'));
    try {
      const url = `sqlite:${join(dir, 'idpool.db')}`;
      await prepare(url);
      const cell = await reserveFromProcesses(url, n);
      rows.push([
        'SQLite (WAL, synchronous=FULL)',
        `${n} (processes)`,
        (cell.reservations / cell.seconds).toFixed(0),
        p99(cell.latenciesMs).toFixed(2),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows)
    process.stdout.write(`${r.map((v, c) => (c >= 2 ? v.padStart(widths[c]) : v.padEnd(widths[c]))).join('  ')}\n`);
  process.stdout.write(
    `segment size ${SEGMENT}; ${WARMUP_MS} ms warm-up, ${MEASURE_MS} ms measured per row; one entity (one contended row)\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
