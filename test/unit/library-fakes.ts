/** Fakes for the library's unit tests: no I/O, time under the test's control. */
import type { Clock } from '../../src/clock';
import type { EntityMode } from '../../src/entities/entity';
import type { EntitySource } from '../../src/library';
import type { Segment, SegmentAllocator } from '../../src/segment/allocator';

export { FakeSegmentAllocator as MemoryAllocator } from '../../src/segment/fake-allocator';

/** Wraps an allocator and delays each reservation by `delayMs` of `clock`'s time (a slow database). */
export class SlowAllocator implements SegmentAllocator {
  delayMs = 0;

  constructor(
    private readonly inner: SegmentAllocator,
    private readonly clock: Clock,
  ) {}

  async reserve(entityKey: string, size: number): Promise<Segment> {
    if (this.delayMs > 0) await this.clock.sleep(this.delayMs);
    return this.inner.reserve(entityKey, size);
  }

  peek(entityKey: string): Promise<bigint> {
    return this.inner.peek(entityKey);
  }

  peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>> {
    return this.inner.peekMany(entityKeys);
  }
}

/** Entity configuration in memory. */
export class MemoryEntities implements EntitySource {
  readonly byKey = new Map<string, { mode: EntityMode; step: number }>();
  reads = 0;

  constructor(entries: Record<string, { mode?: EntityMode; step: number }> = {}) {
    for (const [key, entity] of Object.entries(entries))
      this.byKey.set(key, { mode: entity.mode ?? 'monotonic', step: entity.step });
  }

  async findLive(entityKey: string) {
    this.reads++;
    return this.byKey.get(entityKey);
  }
}
