import { describe, expect, it } from 'vitest';
import { MemoryPoolStore } from '../../src/pool/memory-pool-store';
import type { Segment } from '../../src/segment/allocator';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { type DatabaseBehindReport, HighWaterAllocator, ProcessHighWater } from '../../src/segment/high-water';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';
import { takenArray } from '../support/taken';
import { entityMap, testRefiller } from '../support/refiller';

const TRILLION = 1_000_000_000_000n;

describe('HighWaterAllocator: a database that went back, against a record of what was reserved', () => {
  const setup = () => {
    const db = new FakeSegmentAllocator();
    const reports: DatabaseBehindReport[] = [];
    const guarded = new HighWaterAllocator(db, new ProcessHighWater(), (r) => reports.push(r));
    return { db, reports, guarded };
  };

  it('reports nothing while the database moves forward', async () => {
    const { guarded, reports } = setup();
    expect(await guarded.reserve('orders', 100)).toEqual({ start: 0n, end: 100n });
    expect(await guarded.reserve('orders', 100)).toEqual({ start: 100n, end: 200n });
    expect(reports).toEqual([]);
  });

  it('carries past the record in one reservation whatever the distance, and hands out only numbers above it', async () => {
    const { db, guarded, reports } = setup();
    db.addEntity('orders', TRILLION);
    await guarded.reserve('orders', 100);
    db.addEntity('orders', 500n); // restored: a trillion numbers back
    const before = db.reservations.length;
    const segment = await guarded.reserve('orders', 100);
    expect(segment).toEqual({ start: TRILLION + 100n, end: TRILLION + 200n });
    // The reservation that saw it, and one more that covers the gap and the segment.
    expect(db.reservations.length - before).toBe(2);
    expect(reports).toEqual([
      {
        entityKey: 'orders',
        databaseOffset: 500n,
        record: 'this process',
        recordedOffset: TRILLION + 100n,
        carriedTo: TRILLION + 200n,
      },
    ]);
    expect(await guarded.reserve('orders', 100)).toEqual({ start: TRILLION + 200n, end: TRILLION + 300n });
    expect(reports).toHaveLength(1);
  });

  it('a reservation straddling the record is replaced by one above it', async () => {
    const { db, guarded, reports } = setup();
    await guarded.reserve('orders', 100);
    db.addEntity('orders', 50n);
    const segment = await guarded.reserve('orders', 100);
    expect(segment.start).toBeGreaterThanOrEqual(100n);
    expect(segment.end - segment.start).toBe(100n);
    expect(reports).toHaveLength(1);
  });

  it('checkAll carries every entity below the record up to it, once each, and leaves the others', async () => {
    const { db, guarded, reports } = setup();
    await guarded.reserve('orders', 1000);
    await guarded.reserve('invoices', 1000);
    db.addEntity('orders', 10n);
    const carried = await guarded.checkAll(['orders', 'invoices']);
    expect(carried.map((r) => r.entityKey)).toEqual(['orders']);
    expect(await db.peek('orders')).toBe(1000n);
    expect(reports).toHaveLength(1);
    expect(await guarded.checkAll(['orders', 'invoices'])).toEqual([]);
  });
});

describe('refiller: a segment refused because the database is behind the fence', () => {
  const setup = (beforePush?: (entityKey: string, segment: Segment) => Promise<void>) => {
    const clock = new FakeClock();
    const store = new MemoryPoolStore(clock);
    const allocator = new FakeSegmentAllocator();
    const configs = new Map([['orders', entityConfig({ key: 'orders', step: 100, maxPoolSize: 1000 })]]);
    const behind: DatabaseBehindReport[] = [];
    const refused: [bigint, bigint][] = [];
    const refiller = testRefiller(clock, {
      entities: entityMap(configs),
      allocator,
      store,
      intervalMs: 100,
      beforePush,
      events: {
        refilled: () => undefined,
        fenceRefused: (_key, start, end) => void refused.push([start, end]),
        databaseBehind: (report) => void behind.push(report),
        poolDiscarded: () => undefined,
        epochChanged: () => undefined,
        failed: () => undefined,
      },
    });
    const drain = async () => {
      const size = await store.size('orders');
      if (size > 0) await store.take('orders', size, 0);
    };
    return { store, allocator, refiller, behind, refused, drain };
  };

  it('carries the offset past the fence in the same refill, whatever the distance, with one database_behind', async () => {
    const { store, allocator, refiller, behind, refused, drain } = setup();
    allocator.addEntity('orders', TRILLION);
    await refiller.refill('orders');
    const fence = await store.fence('orders');
    expect(fence).toBeGreaterThan(TRILLION);
    await drain();
    allocator.addEntity('orders', 0n); // restored from a backup a trillion numbers old
    const before = allocator.reservations.length;
    await refiller.refill('orders');
    // The refused segment, the gap, and the segment pushed: three reservations, not a trillion / 100.
    expect(allocator.reservations.length - before).toBe(3);
    expect(await store.size('orders')).toBeGreaterThan(0);
    const ids = takenArray(await store.take('orders', await store.size('orders'), 0));
    expect(ids.every((id) => BigInt(id) > fence!)).toBe(true);
    expect(refused).toEqual([]);
    expect(behind).toHaveLength(1);
    expect(behind[0]).toMatchObject({ entityKey: 'orders', databaseOffset: 0n, record: 'fence', fence });
    expect(behind[0].carriedTo).toBe(fence! + 1n);
    // The episode is over: later refills say nothing.
    await refiller.refill('orders', 1000);
    expect(behind).toHaveLength(1);
  });

  it('a restore a few numbers behind the fence, the refused segment reaching above it: database_behind, not fence_refused', async () => {
    const { store, allocator, refiller, behind, refused, drain } = setup();
    await refiller.refill('orders');
    const fence = (await store.fence('orders'))!;
    await drain();
    allocator.addEntity('orders', fence + 1n - 50n); // restored 50 numbers back: the next segment straddles the fence
    await refiller.refill('orders');
    expect(refused).toEqual([]);
    expect(behind).toHaveLength(1);
    expect(behind[0]).toMatchObject({ databaseOffset: fence + 1n - 50n, recordedOffset: fence + 1n, fence });
    // Nothing to reserve for the gap: the refused segment's reservation had carried the database past the fence.
    expect(behind[0].carriedTo).toBe(allocator.reservations.at(-2)!.end);
    const ids = takenArray(await store.take('orders', await store.size('orders'), 0));
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.every((id) => BigInt(id) > fence)).toBe(true);
  });

  it('a push tried again after it was accepted is a fence_refused, not database_behind', async () => {
    const { store, refiller, behind, refused } = setup(async (key, segment) => {
      if ((await store.fence(key)) !== undefined) return;
      // The first try went through, its answer lost: the second finds its own segment under the fence.
      const ids = Array.from({ length: Number(segment.end - segment.start) }, (_, i) =>
        String(segment.start + BigInt(i)),
      );
      await store.push(key, ids, segment.start, segment.end - 1n);
    });
    await refiller.refill('orders');
    expect(refused).toHaveLength(1);
    expect(behind).toEqual([]);
  });

  it('a stale refiller (the database already past the fence) is still a fence_refused, not database_behind', async () => {
    let once = true;
    const { store, allocator, refiller, behind, refused } = setup(async (_key, segment) => {
      if (!once) return;
      once = false;
      // Meanwhile another refiller reserved above this segment and pushed.
      allocator.addEntity('orders', segment.end + 500n);
      await store.push('orders', [String(segment.end + 100n)], segment.end + 100n, segment.end + 100n);
    });
    await refiller.refill('orders');
    expect(refused).toHaveLength(1);
    expect(behind).toEqual([]);
  });
});
