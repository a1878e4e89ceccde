import { expect, it } from 'vitest';
import type { SegmentAllocator } from '../../../src/segment/allocator';

/** An allocator with no entities, and a way to register one whose line starts at `startOffset`. */
export interface AllocatorFixture {
  allocator: SegmentAllocator;
  addEntity: (entityKey: string, startOffset: bigint) => Promise<void>;
}

/**
 * What every {@link SegmentAllocator} does, run against the SQL allocator and
 * `FakeSegmentAllocator` alike: segments of one entity are contiguous, never
 * overlap, and `peek` is the first number not reserved.
 */
export function segmentAllocatorContract(make: () => Promise<AllocatorFixture>): void {
  it('reserves contiguous segments from the start offset; peek is the next unreserved number', async () => {
    const { allocator, addEntity } = await make();
    await addEntity('c-line', 100n);
    expect(await allocator.peek('c-line')).toBe(100n);
    expect(await allocator.reserve('c-line', 10)).toEqual({ start: 100n, end: 110n });
    expect(await allocator.reserve('c-line', 5)).toEqual({ start: 110n, end: 115n });
    expect(await allocator.peek('c-line')).toBe(115n);
  });

  it('concurrent reservations never overlap and leave no gap', async () => {
    const { allocator, addEntity } = await make();
    await addEntity('c-race', 0n);
    const segments = await Promise.all(Array.from({ length: 40 }, () => allocator.reserve('c-race', 7)));
    segments.sort((a, b) => (a.start < b.start ? -1 : 1));
    for (let i = 0; i < segments.length; i++)
      expect(segments[i]).toEqual({ start: BigInt(i * 7), end: BigInt(i * 7 + 7) });
    expect(await allocator.peek('c-race')).toBe(280n);
  });

  it('peekMany answers the offsets of many entities at once', async () => {
    const { allocator, addEntity } = await make();
    await addEntity('c-x', 0n);
    await addEntity('c-y', 50n);
    await allocator.reserve('c-x', 3);
    expect(await allocator.peekMany(['c-x', 'c-y'])).toEqual(
      new Map([
        ['c-x', 3n],
        ['c-y', 50n],
      ]),
    );
  });

  it('refuses a size that is not a positive integer', async () => {
    const { allocator, addEntity } = await make();
    await addEntity('c-size', 0n);
    await expect(allocator.reserve('c-size', 0)).rejects.toThrow(RangeError);
    await expect(allocator.reserve('c-size', 1.5)).rejects.toThrow(RangeError);
    expect(await allocator.peek('c-size')).toBe(0n);
  });
}
