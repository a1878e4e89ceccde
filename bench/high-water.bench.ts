/**
 * What the embedded service's high-water file costs a reservation
 * (docs/ha.md "Restores and failovers"): one SQLite reservation
 * (`SqlSegmentAllocator.reserve`) alone, and through `HighWaterAllocator`
 * with the file beside the database (write a temp file, fsync, rename,
 * fsync the folder before the segment is handed out), with 1 and 1,000
 * entities in the file. One reservation is one refill of one entity: a
 * default entity (step 1,000) reserves once per 1,000 ids.
 *
 *   npx tsx bench/high-water.bench.ts        (or `npm run bench -- high-water`)
 *
 * Figures only; a benchmark asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/clock';
import { openDatabase } from '../src/db/database';
import { SqlEntityStore } from '../src/entities/entity-store';
import { EntityRegistry } from '../src/entities/registry';
import { SqlSegmentAllocator, type SegmentAllocator } from '../src/segment/allocator';
import { HighWaterAllocator, HighWaterFile } from '../src/segment/high-water';

const RESERVATIONS = 500;

async function measure(allocator: SegmentAllocator): Promise<string> {
  for (let i = 0; i < 20; i++) await allocator.reserve('orders', 1000);
  const times: number[] = [];
  for (let i = 0; i < RESERVATIONS; i++) {
    const started = performance.now();
    await allocator.reserve('orders', 1000);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.floor(q * (times.length - 1))].toFixed(2);
  return `median ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-hw-bench-'));
  try {
    const file = join(dir, 'idpool.db');
    const db = await openDatabase(`sqlite:${file}`);
    await new EntityRegistry(new SqlEntityStore(db), systemClock).register({
      key: 'orders',
      mode: 'monotonic',
    } as never);
    const sql = new SqlSegmentAllocator(db);
    console.log(`SQLite reservation alone:               ${await measure(sql)}`);
    for (const entities of [1, 1000]) {
      const highWater = HighWaterFile.beside(file, db.description);
      for (let i = 1; i < entities; i++) await highWater.raise(`entity-${i}`, 1000n);
      let end = 1_000_000n;
      const writeOnly = {
        reserve: async () => (await highWater.raise('orders', (end += 1000n)), { start: end - 1000n, end }),
      };
      console.log(
        `the file write alone (${String(entities).padStart(4)} entities):     ${await measure(writeOnly as never)}`,
      );
      const guarded = new HighWaterAllocator(sql, highWater, () => undefined);
      console.log(`with the high-water file (${String(entities).padStart(4)} entities): ${await measure(guarded)}`);
    }
    await db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
