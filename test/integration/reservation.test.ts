import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { systemClock } from '../../src/clock';
import { openDatabase } from '../../src/db/database';
import { SqlSegmentAllocator } from '../../src/segment/allocator';
import { SQL_SERVERS, createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const run = promisify(execFile);
const FIXTURE = join(__dirname, 'fixtures', 'reserve-loop.ts');

async function reserveFromProcesses(url: string, key: string, processes: number, connections: number, ms: number) {
  const outputs = await Promise.all(
    Array.from({ length: processes }, () =>
      run(process.execPath, ['--import', 'tsx', FIXTURE, url, key, String(connections), String(ms)], {
        maxBuffer: 64 << 20,
      }),
    ),
  );
  return outputs
    .flatMap((o) => o.stdout.trim().split('\n'))
    .filter(Boolean)
    .map((line) => line.split(' ').map(BigInt) as [bigint, bigint])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Segments must tile [start, current_offset) exactly: disjoint and gap-free. */
function expectTiled(segments: [bigint, bigint][], start: bigint, end: bigint) {
  expect(segments.length).toBeGreaterThan(50);
  expect(segments[0][0]).toBe(start);
  for (let i = 1; i < segments.length; i++) expect(segments[i][0]).toBe(segments[i - 1][1]);
  expect(segments[segments.length - 1][1]).toBe(end);
}

async function registerEntity(url: string, key: string, startOffset: bigint) {
  const db = await openDatabase(url);
  await new EntityRegistry(new SqlEntityStore(db), systemClock).register({ key, mode: 'monotonic', startOffset });
  return db;
}

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(`segment reservation under concurrency on ${name}`, { [server]: true }, () => {
    it('2 processes x 8 connections reserve disjoint, gap-free segments', async () => {
      const schema = await createTestSchema(server);
      try {
        const start = 2n ** 53n - 1000n; // straddles 2^53: offsets must stay exact
        const db = await registerEntity(schema.url, 'orders', start);
        const segments = await reserveFromProcesses(schema.url, 'orders', 2, 8, 3000);
        const end = await new SqlSegmentAllocator(db).peek('orders');
        expectTiled(segments, start, end);
        await db.close();
      } finally {
        await schema.drop();
      }
    });
  });
}

describe('segment reservation under concurrency on SQLite', () => {
  it('SQLite: 2 processes x 8 loops on one file reserve disjoint, gap-free segments', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idpool-sqlite-'));
    const url = `sqlite:${join(dir, 'idpool.db')}`;
    try {
      const db = await registerEntity(url, 'orders', 0n);
      const segments = await reserveFromProcesses(url, 'orders', 2, 8, 2000);
      const end = await new SqlSegmentAllocator(db).peek('orders');
      expectTiled(segments, 0n, end);
      await db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to reserve for an unknown or retired entity', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idpool-sqlite-'));
    const db = await registerEntity(`sqlite:${join(dir, 'idpool.db')}`, 'users', 0n);
    try {
      const allocator = new SqlSegmentAllocator(db);
      await expect(allocator.reserve('nobody', 10)).rejects.toThrow(/no live segment entity/);
      await new EntityRegistry(new SqlEntityStore(db), systemClock).retire('users');
      await expect(allocator.reserve('users', 10)).rejects.toThrow(/no live segment entity/);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
