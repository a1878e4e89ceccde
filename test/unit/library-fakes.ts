/** Fakes for the library's unit tests: no I/O, time under the test's control. */
import type { EntityMode } from '../../src/entities/entity';
import type { Clock } from '../../src/clock';
import type { EntitySource } from '../../src/library';
import type { Segment, SegmentAllocator } from '../../src/segment/allocator';

/** A clock that moves only when told to. */
export class FakeClock implements Clock {
  private t = 0;
  private sleepers: Array<{ at: number; wake: () => void }> = [];

  now(): number {
    return 1_700_000_000_000 + this.t;
  }

  monotonic(): number {
    return this.t;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((wake) => this.sleepers.push({ at: this.t + ms, wake }));
  }

  advance(ms: number): void {
    this.t += ms;
    const due = this.sleepers.filter((s) => s.at <= this.t);
    this.sleepers = this.sleepers.filter((s) => s.at > this.t);
    for (const s of due) s.wake();
  }
}

export { FakeSegmentAllocator as MemoryAllocator } from '../../src/segment/fake-allocator';

/** Wraps an allocator and delays each reservation by `delayMs` of real time (a slow database). */
export class SlowAllocator implements SegmentAllocator {
  delayMs = 0;

  constructor(private readonly inner: SegmentAllocator) {}

  async reserve(entityKey: string, size: number): Promise<Segment> {
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
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
  readonly apps = new Map<string, { mode: EntityMode; step: number }>();
  reads = 0;

  constructor(entries: Record<string, { mode?: EntityMode; step: number }> = {}) {
    for (const [key, app] of Object.entries(entries)) this.apps.set(key, { mode: app.mode ?? 'monotonic', step: app.step });
  }

  async findLive(entityKey: string) {
    this.reads++;
    return this.apps.get(entityKey);
  }
}

/** Lets queued setImmediate callbacks and promise continuations run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}
