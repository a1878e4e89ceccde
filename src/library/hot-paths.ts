import type { Segment } from '../segment/allocator';
import { MAX_SAFE_ID } from '../limits';
import { UnsafeNumberIdError } from './errors';
import { BufferedIdGenerator, type Deps, loadPoint } from './loader';
import { BufferedSegment } from './segment-buffer';

// The hot paths: a `number` and a `bigint` copy keep each one monomorphic.

/** Ids as JS numbers, from segments proven below 2^53. */
export class NumberIdGenerator extends BufferedIdGenerator<number> {
  private readonly stride: number;

  constructor(deps: Deps) {
    super(deps);
    this.stride = deps.stride;
  }

  // The hot path: a key compare, two id compares, one add. Everything else is nextSlow.
  next(entityKey: string): number {
    const buffer = this.find(entityKey);
    if (buffer !== undefined) {
      const segment = buffer.segments[buffer.currentPos];
      const id = segment.value;
      if (id < segment.max) {
        segment.value = id + this.stride;
        if (id >= segment.loadNextAt) this.prefetch(buffer);
        return id;
      }
    }
    return this.nextSlow(entityKey);
  }

  protected emptySegment(): BufferedSegment<number> {
    return new BufferedSegment(0, 0, 0, 0);
  }

  protected toSegment(entityKey: string, range: Segment, size: number): BufferedSegment<number> {
    // The bound itself must be exact for `id < max` to be; that proves every id below 2^53.
    const max = this.deps.idStride.toId(range.end);
    if (max > MAX_SAFE_ID) throw new UnsafeNumberIdError(entityKey, this.deps.idStride.toId(range.end - 1n));
    const value = Number(this.deps.idStride.toId(range.start));
    return new BufferedSegment(
      value,
      Number(max),
      size,
      value + loadPoint(size, this.deps.settings.prefetchAt) * this.stride,
    );
  }

  protected remaining(segment: BufferedSegment<number>): number {
    return segment.value < segment.max ? (segment.max - segment.value) / this.stride : 0;
  }

  protected drain(segment: BufferedSegment<number>, count: number, out: number[]): void {
    const n = Math.min(count, this.remaining(segment));
    let id = segment.value;
    for (let i = 0; i < n; i++, id += this.stride) out.push(id);
    segment.value = id;
  }

  protected reachedLoadPoint(segment: BufferedSegment<number>): boolean {
    return segment.value > segment.loadNextAt;
  }
}

/** Ids as bigint: any segment of the 63-bit line. */
export class BigIntIdGenerator extends BufferedIdGenerator<bigint> {
  private readonly stride: bigint;

  constructor(deps: Deps) {
    super(deps);
    this.stride = BigInt(deps.stride);
  }

  next(entityKey: string): bigint {
    const buffer = this.find(entityKey);
    if (buffer !== undefined) {
      const segment = buffer.segments[buffer.currentPos];
      const id = segment.value;
      if (id < segment.max) {
        segment.value = id + this.stride;
        if (id >= segment.loadNextAt) this.prefetch(buffer);
        return id;
      }
    }
    return this.nextSlow(entityKey);
  }

  protected emptySegment(): BufferedSegment<bigint> {
    return new BufferedSegment(0n, 0n, 0, 0n);
  }

  protected toSegment(_entityKey: string, range: Segment, size: number): BufferedSegment<bigint> {
    const value = this.deps.idStride.toId(range.start);
    return new BufferedSegment(
      value,
      this.deps.idStride.toId(range.end),
      size,
      value + BigInt(loadPoint(size, this.deps.settings.prefetchAt)) * this.stride,
    );
  }

  protected remaining(segment: BufferedSegment<bigint>): number {
    return segment.value < segment.max ? Number((segment.max - segment.value) / this.stride) : 0;
  }

  protected drain(segment: BufferedSegment<bigint>, count: number, out: bigint[]): void {
    const n = Math.min(count, this.remaining(segment));
    let id = segment.value;
    for (let i = 0; i < n; i++, id += this.stride) out.push(id);
    segment.value = id;
  }

  protected reachedLoadPoint(segment: BufferedSegment<bigint>): boolean {
    return segment.value > segment.loadNextAt;
  }
}
