import { describe, expect, it } from 'vitest';
import { type Logger, silentLogger } from '../../src/logger';
import { loggingRefillEvents } from '../../src/ops/observers';
import { FenceCarrier } from '../../src/pool/fence-carry';
import { FenceCheck } from '../../src/pool/fence-check';
import { MemoryPoolStore, MemoryRefillLock } from '../../src/pool/memory-pool-store';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import type { DatabaseBehindReport } from '../../src/segment/high-water';
import { IdStride } from '../../src/segment/stride';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';

/** Dozens of entities, as a periodic loop over many must be tested. */
const KEYS = Array.from({ length: 40 }, (_, i) => `e${i}`);

describe('FenceCheck: every entity behind its fence is carried past it, without a refill', () => {
  const setup = () => {
    const clock = new FakeClock();
    const store = new MemoryPoolStore(clock);
    const allocator = new FakeSegmentAllocator();
    const lock = new MemoryRefillLock();
    const configs = new Map(KEYS.map((key) => [key, entityConfig({ key, step: 100, maxPoolSize: 1000 })]));
    const behind: DatabaseBehindReport[] = [];
    const warnings: object[] = [];
    const log: Logger = { ...silentLogger, warn: (obj) => void warnings.push(obj) };
    const stride = new IdStride();
    const carrier = new FenceCarrier({
      entities: { get: (key) => configs.get(key) },
      allocator,
      store,
      stride,
      events: { databaseBehind: (r) => void behind.push(r) },
    });
    const offsets = { peekAll: () => allocator.peekMany(KEYS) };
    const check = new FenceCheck({
      entities: { segmentKeys: () => KEYS },
      offsets,
      store,
      lock,
      carrier,
      clock,
      log,
      intervalMs: 1000,
    });
    /** What a refill does: reserve a segment, then push it (the push raises the fence). */
    const refill = async (key: string) => {
      const { start, end } = await allocator.reserve(key, 100);
      const ids = Array.from({ length: 100 }, (_, i) => String(start + BigInt(i)));
      expect((await store.push(key, ids, start, end - 1n)).kind).toBe('ok');
    };
    return { clock, store, allocator, lock, behind, warnings, offsets, check, refill };
  };

  it('carries each entity behind once, one database_behind each for the episode, and leaves the rest', async () => {
    const { store, allocator, behind, check, refill } = setup();
    for (const key of KEYS) await refill(key);
    // A restore put half of them back to the start.
    const restored = KEYS.filter((_, i) => i % 2 === 0);
    for (const key of restored) allocator.addEntity(key, 0n);
    await check.run();
    for (const key of KEYS) expect(await allocator.peek(key)).toBeGreaterThan((await store.fence(key))!);
    expect(behind.map((r) => r.entityKey).sort()).toEqual([...restored].sort());
    expect(behind[0]).toMatchObject({ databaseOffset: 0n, record: 'fence', fence: 99n, carriedTo: 100n });
    const reservations = allocator.reservations.length;
    await check.run();
    expect(allocator.reservations.length).toBe(reservations);
    expect(behind).toHaveLength(restored.length);
    // A later restore is a new episode, reported again.
    allocator.addEntity('e0', 0n);
    await check.run();
    expect(behind.filter((r) => r.entityKey === 'e0')).toHaveLength(2);
  });

  it('a refill between the two reads is not taken for a database that went back (the fence is read first)', async () => {
    const { allocator, behind, offsets, check, refill } = setup();
    for (const key of KEYS) await refill(key);
    // Every entity refilled (reserved and pushed) between the check's fence read and its offset read.
    const peekAll = offsets.peekAll;
    offsets.peekAll = async () => {
      for (const key of KEYS) await refill(key);
      return peekAll();
    };
    const reservations = allocator.reservations.length;
    await check.run();
    expect(behind).toEqual([]);
    expect(allocator.reservations.length - reservations).toBe(KEYS.length);
  });

  it('an entity whose refill lock is held is left to that refill, then carried by the next run', async () => {
    const { allocator, lock, behind, check, refill } = setup();
    await refill('e1');
    allocator.addEntity('e1', 0n);
    const held = (await lock.acquire('e1'))!;
    await check.run();
    expect(await allocator.peek('e1')).toBe(0n);
    await held.release();
    await check.run();
    expect(await allocator.peek('e1')).toBe(100n);
    expect(behind).toHaveLength(1);
  });

  it('a database that is down: each run resolves, one warning a minute, and the first run after carries', async () => {
    const { clock, allocator, warnings, offsets, check, refill, behind } = setup();
    await refill('e3');
    allocator.addEntity('e3', 0n);
    const peekAll = offsets.peekAll;
    offsets.peekAll = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:3306'));
    for (let i = 0; i < 100; i++) {
      await check.run();
      clock.advance(100);
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ entityKey: '*', err: expect.stringContaining('ECONNREFUSED') });
    offsets.peekAll = peekAll;
    await check.run();
    expect(await allocator.peek('e3')).toBe(100n);
    expect(behind).toHaveLength(1);
  });

  it('turned off (0): start() schedules nothing', async () => {
    const { clock, store, allocator, lock } = setup();
    const off = new FenceCheck({
      entities: { segmentKeys: () => KEYS },
      offsets: { peekAll: () => allocator.peekMany(KEYS) },
      store,
      lock,
      carrier: new FenceCarrier({
        entities: { get: () => undefined },
        allocator,
        store,
        stride: new IdStride(),
        events: loggingRefillEvents(silentLogger, { get: () => undefined }, new IdStride()),
      }),
      clock,
      log: silentLogger,
      intervalMs: 0,
    });
    off.start();
    expect(clock.sleeps).toEqual([]);
    await off.stop();
  });
  it('reads every fence only when something moved: the offsets digest, a reservation of this process, or a minute gone', async () => {
    const { clock, store, allocator, behind, refill } = setup();
    for (const key of KEYS) await refill(key);
    let reservations = 0;
    let fenceReads = 0;
    const fences = store.fences.bind(store);
    const check = new FenceCheck({
      entities: { segmentKeys: () => KEYS },
      offsets: {
        peekAll: () => allocator.peekMany(KEYS),
        offsetsMark: async () => [...(await allocator.peekMany(KEYS)).values()].join(','),
      },
      reservations: () => reservations,
      store: {
        fences: (keys) => {
          fenceReads++;
          return fences(keys);
        },
      },
      lock: new MemoryRefillLock(),
      carrier: new FenceCarrier({
        entities: { get: () => entityConfig({ step: 100, maxPoolSize: 1000 }) },
        allocator,
        store,
        stride: new IdStride(),
        events: { databaseBehind: (r) => void behind.push(r) },
      }),
      clock,
      log: silentLogger,
      intervalMs: 1000,
    });
    await check.run();
    expect(fenceReads).toBe(1);
    // Nothing moved: the digest alone.
    await check.run();
    await check.run();
    expect(fenceReads).toBe(1);
    expect(check.stats.digestOnly).toBe(2);
    // This process reserved (its push may have raised a fence): every fence again, then quiet.
    reservations++;
    await check.run();
    await check.run();
    expect(fenceReads).toBe(2);
    // A restore moves the digest: read at once, and carried.
    allocator.addEntity('e7', 0n);
    await check.run();
    expect(fenceReads).toBe(3);
    expect(behind.map((r) => r.entityKey)).toEqual(['e7']);
    // The carry moved the offsets: one more full run finds all clear, then the digest again.
    await check.run();
    await check.run();
    expect(fenceReads).toBe(4);
    // A minute on, every fence whatever the digest says.
    clock.advance(60_000);
    await check.run();
    expect(fenceReads).toBe(5);
  });
});
