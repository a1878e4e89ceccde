import type { LineRaiser, Segment, SegmentAllocator } from './allocator';

/** Each entity's number line in memory, reserved as `SqlSegmentAllocator` does (unit tests). */
export class FakeSegmentAllocator implements SegmentAllocator, LineRaiser {
  private readonly lines = new Map<string, bigint>();
  readonly reservations: { entityKey: string; start: bigint; end: bigint; size: number }[] = [];
  /** When set, every reservation fails with it (a database that is down). */
  failWith: Error | undefined;
  /** Called inside every reservation (tests move a fake clock here). */
  onReserve: (() => void) | undefined;

  /** Every entity's line starts at `startOffset`. */
  constructor(private readonly startOffset = 0n) {}

  /** Starts `entityKey`'s line at `startOffset` (a registered entity's own start). */
  addEntity(entityKey: string, startOffset: bigint): void {
    this.lines.set(entityKey, startOffset);
  }

  async reserve(entityKey: string, size: number): Promise<Segment> {
    if (!Number.isSafeInteger(size) || size <= 0)
      throw new RangeError(`segment size must be a positive integer, got ${size}`);
    this.onReserve?.();
    if (this.failWith) throw this.failWith;
    const start = this.line(entityKey);
    const end = start + BigInt(size);
    this.lines.set(entityKey, end);
    this.reservations.push({ entityKey, start, end, size });
    return { start, end };
  }

  async raise(entityKey: string, atLeast: bigint): Promise<bigint> {
    // Starts are not kept here; moving the line is what reservations see.
    if (this.line(entityKey) < atLeast) this.lines.set(entityKey, atLeast);
    return this.line(entityKey);
  }

  async peek(entityKey: string): Promise<bigint> {
    return this.line(entityKey);
  }

  async peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>> {
    return new Map(entityKeys.map((key) => [key, this.line(key)]));
  }

  private line(entityKey: string): bigint {
    return this.lines.get(entityKey) ?? this.startOffset;
  }

  sizes(): number[] {
    return this.reservations.map((r) => r.size);
  }
}
