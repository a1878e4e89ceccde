import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/errors';
import {
  GeneratorClosedError,
  InvalidCountError,
  InvalidOptionError,
  SegmentsNotReadyError,
  UnsafeNumberIdError,
  UnsupportedEntityError,
} from '../../src/library';
import { createIdGeneratorWith } from '../../src/library/generator';
import { nextStep } from '../../src/double-buffer/double-buffer';
import { FakeClock, settle } from '../support/clock';
import { MemoryAllocator, MemoryEntities } from './library-fakes';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function setup(options: { step?: number; offset?: bigint; clock?: FakeClock } = {}) {
  const allocator = new MemoryAllocator(options.offset);
  const entities = new MemoryEntities({ orders: { step: options.step ?? 10 } });
  return { allocator, entities, clock: options.clock ?? new FakeClock() };
}

describe('createIdGenerator: handing out', () => {
  it('hands out every reserved number once, in order, through next, nextAsync and take', async () => {
    const { allocator, entities, clock } = setup({ step: 10 });
    const gen = await createIdGeneratorWith({
      ids: 'number',
      allocator,
      entities,
      clock,
      maxStep: 40,
      prefetchAt: 0.5,
    });
    const ids: number[] = [];
    for (let round = 0; ids.length < 3000; round++) {
      if (round % 3 === 0) ids.push(...(await gen.take('orders', 1 + (round % 97))));
      else if (round % 3 === 1) ids.push(await gen.nextAsync('orders'));
      else {
        try {
          ids.push(gen.next('orders'));
        } catch (err) {
          expect(err).toBeInstanceOf(SegmentsNotReadyError);
          await settle();
        }
      }
    }
    // One process, nothing wasted: exactly 0, 1, 2, … across many segments.
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i));
    expect(allocator.reservations.length).toBeGreaterThan(50);
    for (const r of allocator.reservations) expect(r.size).toBeLessThanOrEqual(40);
    await gen.close();
  });

  it('next() is synchronous: "not ready" before the first segment, ids after open()', async () => {
    const { allocator, entities, clock } = setup({ step: 10 });
    const gen = await createIdGeneratorWith({ allocator, entities, clock });
    expect(() => gen.next('orders')).toThrow(SegmentsNotReadyError);
    await gen.open('orders');
    const id = gen.next('orders');
    expect(typeof id).toBe('bigint');
    expect(id).toBe(0n);
    expect(gen.next('orders')).toBe(1n);
    await gen.close();
  });

  it('starts loading the next segment once prefetchAt of the current one is used', async () => {
    const { allocator, entities, clock } = setup({ step: 100 });
    const gen = await createIdGeneratorWith({ ids: 'number', allocator, entities, clock, prefetchAt: 0.2 });
    await gen.open('orders');
    expect(allocator.reservations).toHaveLength(1);
    for (let i = 0; i < 19; i++) expect(gen.next('orders')).toBe(i);
    await settle();
    expect(allocator.reservations).toHaveLength(1);
    expect(gen.next('orders')).toBe(19); // the 20th id: 20% used
    await settle();
    expect(allocator.reservations).toHaveLength(2);
    // The rest of the segment and the prefetched one come out without waiting; no third load yet.
    for (let i = 20; i < 100; i++) expect(gen.next('orders')).toBe(i);
    expect(allocator.reservations[1].start).toBe(100n);
    expect(gen.next('orders')).toBe(100);
    await settle();
    expect(allocator.reservations).toHaveLength(2);
    await gen.close();
  });

  it('maps the n-th number to n·c + i for a deployment with a stride', async () => {
    const gen = await createIdGeneratorWith({ ids: 'number', ...setup({ step: 10 }), strideCount: 3, strideIndex: 2 });
    const ids = await gen.take('orders', 95);
    expect(ids).toEqual(Array.from({ length: 95 }, (_, n) => n * 3 + 2));
    await gen.close();
  });

  it('still reads the deprecated clusterCount/clusterIndex for one release, and refuses them disagreeing with the stride names', async () => {
    const { allocator, entities, clock } = setup({ step: 10 });
    // A plain object, as a caller's older options would arrive (a literal in the call would be flagged deprecated).
    const deprecated = { clusterCount: 4, clusterIndex: 1 };
    const gen = await createIdGeneratorWith({ ids: 'number', allocator, entities, clock, ...deprecated });
    expect(await gen.take('orders', 3)).toEqual([1, 5, 9]);
    await gen.close();
    const err = await createIdGeneratorWith({ allocator, entities, clock, strideCount: 4, clusterCount: 3 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InvalidOptionError);
    expect((err as InvalidOptionError).option).toBe('strideCount');
    expect((err as Error).message).toContain('clusterCount 3 disagree');
  });

  it('number ids stop short of 2^53 with UnsafeNumberIdError; bigint ids go on', async () => {
    const start = BigInt(MAX_SAFE) - 149n;
    const numbers = setup({ step: 100, offset: start });
    const gen = await createIdGeneratorWith({ ids: 'number', ...numbers, prefetchAt: 0 });
    const ids = await gen.take('orders', 100);
    expect(ids[0]).toBe(Number(start));
    expect(ids[99]).toBe(Number(start) + 99);
    // The next segment would end above MAX_SAFE_INTEGER: refused, nothing handed out from it.
    await expect(gen.take('orders', 1)).rejects.toBeInstanceOf(UnsafeNumberIdError);
    expect(() => gen.next('orders')).toThrow(UnsafeNumberIdError);
    await gen.close();

    const bigints = setup({ step: 100, offset: start });
    const big = await createIdGeneratorWith({ ...bigints });
    const all = await big.take('orders', 300);
    expect(all[0]).toBe(start);
    expect(all[299]).toBe(start + 299n);
    expect(all[299] > 2n ** 53n).toBe(true);
    await big.close();
  });

  it('ids of several entities come from their own lines', async () => {
    const allocator = new MemoryAllocator();
    const entities = new MemoryEntities({ a: { step: 5 }, b: { step: 5 } });
    const gen = await createIdGeneratorWith({ ids: 'number', allocator, entities, clock: new FakeClock() });
    await gen.open('a', 'b');
    const a = [gen.next('a'), gen.next('a')];
    const b = [gen.next('b')];
    a.push(gen.next('a'));
    expect(a[0] < a[1] && a[1] < a[2]).toBe(true);
    // Each entity's line starts at 0: every id lies in a reservation of its own entity.
    const ownedBy = (key: string, id: number) =>
      allocator.reservations.some((r) => r.entityKey === key && BigInt(id) >= r.start && BigInt(id) < r.end);
    expect(a.every((id) => ownedBy('a', id))).toBe(true);
    expect(b.every((id) => ownedBy('b', id))).toBe(true);
    expect(new Set(allocator.reservations.map((r) => r.entityKey))).toEqual(new Set(['a', 'b']));
    await gen.close();
  });
});

describe('createIdGenerator: errors', () => {
  it('unknown entities are NotFoundError; snowflake and trend entities UnsupportedEntityError', async () => {
    const allocator = new MemoryAllocator();
    const entities = new MemoryEntities({
      flakes: { mode: 'snowflake', step: 10 },
      shuffled: { mode: 'trend', step: 10 },
    });
    const gen = await createIdGeneratorWith({ allocator, entities, clock: new FakeClock() });
    await expect(gen.nextAsync('nope')).rejects.toBeInstanceOf(NotFoundError);
    await expect(gen.open('flakes')).rejects.toBeInstanceOf(UnsupportedEntityError);
    await expect(gen.take('shuffled', 3)).rejects.toBeInstanceOf(UnsupportedEntityError);
    expect(allocator.reservations).toHaveLength(0);
    await gen.close();
  });

  it('bad counts are InvalidCountError, bad options InvalidOptionError naming the option', async () => {
    const { allocator, entities, clock } = setup();
    const gen = await createIdGeneratorWith({ allocator, entities, clock });
    for (const count of [0, -1, 1.5, Number.NaN, 10_000_001])
      await expect(gen.take('orders', count)).rejects.toBeInstanceOf(InvalidCountError);
    await gen.close();
    for (const bad of [
      { prefetchAt: 1 },
      { prefetchAt: -0.1 },
      { maxStep: 0 },
      { waitMs: -1 },
      { strideCount: 2, strideIndex: 2 },
      { clusterCount: 2, clusterIndex: 2 },
      { ids: 'string' },
    ]) {
      const err = await createIdGeneratorWith({ allocator, entities, clock, ...(bad as object) }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidOptionError);
      expect(Object.keys(bad)).toContain((err as InvalidOptionError).option);
    }
  });

  it('close() waits for a reservation under way, then every call is GeneratorClosedError', async () => {
    const { allocator, entities, clock } = setup({ step: 10 });
    let finish!: () => void;
    const gate = new Promise<void>((r) => (finish = r));
    const slow = {
      reserve: async (k: string, n: number) => (await gate, allocator.reserve(k, n)),
      peek: (k: string) => allocator.peek(k),
      peekMany: (keys: readonly string[]) => allocator.peekMany(keys),
    };
    const gen = await createIdGeneratorWith({ allocator: slow, entities, clock });
    const waiting = gen.nextAsync('orders');
    await settle();
    let closed = false;
    const closing = gen.close().then(() => (closed = true));
    await settle();
    expect(closed).toBe(false);
    finish();
    await closing;
    await expect(waiting).rejects.toBeInstanceOf(GeneratorClosedError);
    expect(() => gen.next('orders')).toThrow(GeneratorClosedError);
    await expect(gen.take('orders', 1)).rejects.toBeInstanceOf(GeneratorClosedError);
  });
});

describe('adaptive step', () => {
  it('nextStep doubles below the target, halves past twice the target, stays within bounds', () => {
    const bounds = { minStep: 100, maxStep: 1600, targetSegmentMs: 1000 };
    expect(nextStep(100, 10, bounds)).toBe(200);
    expect(nextStep(1600, 10, bounds)).toBe(1600);
    expect(nextStep(400, 1500, bounds)).toBe(400);
    expect(nextStep(400, 2000, bounds)).toBe(200);
    expect(nextStep(100, 60_000, bounds)).toBe(100);
    // An entity step above maxStep wins: never below the configured step.
    expect(nextStep(5000, 10, { ...bounds, minStep: 5000 })).toBe(5000);
  });

  it('grows under fast consumption and shrinks back, never outside [entity step, maxStep]', async () => {
    const clock = new FakeClock();
    const { allocator, entities } = setup({ step: 100, clock });
    let msPerReservation = 10;
    allocator.onReserve = () => clock.advance(msPerReservation);
    const gen = await createIdGeneratorWith({
      ids: 'number',
      allocator,
      entities,
      clock,
      maxStep: 1600,
      targetSegmentMs: 1000,
      configRefreshMs: 60_000,
    });

    // Fast: a segment lasts 10 ms of a 1000 ms target.
    await gen.take('orders', 20_000);
    const grown = allocator.sizes();
    expect(grown.slice(0, 5)).toEqual([100, 200, 400, 800, 1600]);
    expect(grown.slice(5).every((s) => s === 1600)).toBe(true);

    // Slow: a segment lasts 5 s, past twice the target.
    msPerReservation = 5000;
    const before = grown.length;
    await gen.take('orders', 6000);
    // (The first of these may still be sized by the fast interval that preceded it.)
    const shrunk = allocator.sizes().slice(before);
    for (let i = 1; i < shrunk.length; i++) expect(shrunk[i]).toBeLessThanOrEqual(shrunk[i - 1]);
    const halving = shrunk.slice(shrunk.indexOf(800));
    expect(halving.slice(0, 4)).toEqual([800, 400, 200, 100]);
    expect(halving.slice(4).length).toBeGreaterThan(5);
    expect(halving.slice(4).every((s) => s === 100)).toBe(true);

    // The entity's step is raised to 300: picked up at the next config read, and the floor moves with it.
    entities.byKey.set('orders', { mode: 'monotonic', step: 300 });
    const mark = allocator.sizes().length;
    await gen.take('orders', 6000);
    const floored = allocator.sizes().slice(mark);
    expect(floored.some((s) => s === 300)).toBe(true);
    expect(floored.slice(floored.indexOf(300)).every((s) => s === 300)).toBe(true);
    for (const s of allocator.sizes()) expect(s >= 100 && s <= 1600).toBe(true);
    await gen.close();
  });
});
