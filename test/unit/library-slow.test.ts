import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/errors';
import { SegmentReservationError, SegmentsNotReadyError } from '../../src/library';
import { createIdGeneratorWith } from '../../src/library/generator';
import { FakeClock, settle } from '../support/clock';
import { MemoryAllocator, MemoryEntities, SlowAllocator } from './library-fakes';

/**
 * A slow database: reservations delayed on the fake clock through a wrapping
 * allocator, so a wait ends exactly when the test moves time past it. Only
 * the cost of one synchronous next() is measured on the real clock (bound
 * loose enough for a loaded 2-core machine). maxStep = the entity step pins
 * every segment at 1000 ids.
 */
const DELAY_MS = 400;

function setup() {
  const clock = new FakeClock();
  const memory = new MemoryAllocator();
  const allocator = new SlowAllocator(memory, clock);
  const entities = new MemoryEntities({ orders: { step: 1000 } });
  /** What every generator of these tests is made of. */
  const parts = { ids: 'number' as const, allocator, entities, clock };
  return { clock, memory, allocator, entities, parts };
}

function timed<T>(fn: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = fn();
  return { value, ms: performance.now() - t0 };
}

/** A promise and whether it has settled yet. */
function settled<T>(promise: Promise<T>): { promise: Promise<T>; readonly done: boolean } {
  const state = { promise, done: false };
  promise.then(
    () => void (state.done = true),
    () => void (state.done = true),
  );
  return state;
}

describe('library on a slow database', () => {
  it('next() does not wait while a prefetched segment remains', async () => {
    const { clock, memory, allocator, parts } = setup();
    const gen = await createIdGeneratorWith({ ...parts, prefetchAt: 0.1, maxStep: 1000 });
    await gen.open('orders');
    const ids: number[] = [];
    for (let i = 0; i < 100; i++) ids.push(gen.next('orders'));
    await settle(); // the prefetch of [1000, 2000) runs on a fast database
    expect(memory.reservations).toHaveLength(2);

    allocator.delayMs = DELAY_MS;
    const started = clock.monotonic();
    let slowest = 0;
    // The rest of segment 1 and all of segment 2, yielding between batches as a
    // server would, while the load of segment 3 sits in the slow database.
    while (ids.length < 2000) {
      for (let i = 0; i < 100; i++) {
        const { value, ms } = timed(() => gen.next('orders'));
        ids.push(value);
        slowest = Math.max(slowest, ms);
      }
      await settle(1);
    }
    expect(memory.reservations).toHaveLength(2); // segment 3 has not arrived…
    expect(clock.monotonic() - started).toBe(0); // …and nobody waited for it
    expect(slowest).toBeLessThan(50);
    expect(ids).toEqual(Array.from({ length: 2000 }, (_, i) => i));

    // Both spent: next() says so at once, nextAsync() waits for the slow segment.
    const refused = timed(() => {
      try {
        gen.next('orders');
        return undefined;
      } catch (err) {
        return err;
      }
    });
    expect(refused.value).toBeInstanceOf(SegmentsNotReadyError);
    expect(refused.ms).toBeLessThan(50);
    const waiting = settled(gen.nextAsync('orders'));
    await clock.advanceBy(DELAY_MS - 1, 1);
    expect(waiting.done).toBe(false); // it waits for the slow segment…
    await clock.advanceBy(1, 1);
    expect(await waiting.promise).toBe(2000); // …and gets it when it lands
    await gen.close();
  });

  it('when both segments are spent the caller gets a typed error after waitMs, then ids resume with no repeat', async () => {
    const { clock, memory, allocator, entities } = setup();
    const waitMs = 60;
    const gen = await createIdGeneratorWith({ ids: 'number', allocator, entities, clock, waitMs, maxStep: 1000 });
    await gen.open('orders');
    const ids = await gen.take('orders', 100);
    await settle(); // segment 2 is prefetched on a fast database
    allocator.delayMs = DELAY_MS;
    ids.push(...(await gen.take('orders', 1900))); // the rest of segments 1 and 2; segment 3 is slow

    const t0 = clock.monotonic();
    const refused = settled(gen.nextAsync('orders'));
    await clock.advanceBy(waitMs - 1, 1);
    expect(refused.done).toBe(false); // it waits out waitMs…
    await clock.advanceBy(1, 1);
    await expect(refused.promise).rejects.toBeInstanceOf(SegmentsNotReadyError); // …then says so, long before the segment lands
    expect(clock.monotonic() - t0).toBeLessThan(DELAY_MS - 50);
    // A take that cannot be completed in time fails the same way.
    const take = settled(gen.take('orders', 10));
    await clock.advanceBy(waitMs, 1);
    await expect(take.promise).rejects.toBeInstanceOf(SegmentsNotReadyError);

    // The slow segment lands; drawing goes on above everything handed out.
    await clock.advanceBy(DELAY_MS + 100, 10);
    allocator.delayMs = 0;
    const after = [gen.next('orders'), ...(await gen.take('orders', 1500))];
    expect(after[0]).toBeGreaterThan(ids[ids.length - 1]);
    const all = [...ids, ...after];
    for (let i = 1; i < all.length; i++) expect(all[i]).toBeGreaterThan(all[i - 1]);
    for (const id of all)
      expect(memory.reservations.some((r) => BigInt(id) >= r.start && BigInt(id) < r.end)).toBe(true);
    await gen.close();
  });

  it('a database that fails: typed error without waiting out waitMs, retried after retryDelayMs, no repeat after recovery', async () => {
    const { clock, memory, parts } = setup();
    const gen = await createIdGeneratorWith({ ...parts, waitMs: 5000, retryDelayMs: 300, maxStep: 1000 });
    await gen.open('orders');
    memory.failWith = new Error('connect ECONNREFUSED 127.0.0.1:3306');
    const ids = await gen.take('orders', 1000);
    await settle();

    const t0 = clock.monotonic();
    const err = await gen.nextAsync('orders').catch((e) => e);
    expect(err).toBeInstanceOf(SegmentReservationError);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.message).toContain('ECONNREFUSED');
    expect(clock.monotonic() - t0).toBe(0); // no time passed: waitMs was not waited out
    // Within retryDelayMs the same error comes back without another attempt.
    const reserved = memory.reservations.length;
    expect(() => gen.next('orders')).toThrow(SegmentReservationError);

    memory.failWith = undefined;
    await clock.advanceBy(350, 10);
    const next = await gen.nextAsync('orders');
    expect(next).toBeGreaterThan(ids[ids.length - 1]);
    expect(memory.reservations.length).toBe(reserved + 1);
    await gen.close();
  });
});
