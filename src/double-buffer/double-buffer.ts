// Leaf's double buffer for the library and the client SDK: segments come from the `reserve(size)` handed in.

/** A reserved stretch of ids: `first`, `first + delta`, … `count` of them. */
export interface ReservedIds {
  first: bigint;
  count: number;
  delta: number;
  /** The least size from now on (the library's entity step, read with the reservation); default: the first `count`. */
  minSize?: number;
}

/** Time as the buffer needs it (the library's monotonic clock, the client's clock). */
export interface BufferClock {
  now(): number;
  /** Resolves after `ms`, or early when `signal` aborts (a clock that ignores it only keeps a timer a little longer). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** What a buffer is built from; every number already checked by its caller. */
export interface DoubleBufferOptions {
  /** Reserves a segment of `size` ids (undefined: the source's default size). */
  reserve: (size: number | undefined) => Promise<ReservedIds>;
  clock: BufferClock;
  /** Share of a segment handed out before the next reservation starts (0 ≤ x < 1). */
  prefetchAt: number;
  /** The first reservation's size and the least one; undefined: the source's default, then the first `count`. */
  minSize?: number;
  maxSize: number;
  /** The size adapts to one reservation per this many ms. */
  targetSegmentMs: number;
  /** How long `nextAsync`/`take`/`open` wait for a segment. */
  waitMs: number;
  /** How long a failed reservation is thrown again before the next is tried; undefined: to one caller only. */
  retryDelayMs?: number;
  /** The error for "no ids ready": at once from `next()` (`waitedMs` undefined), or after waiting. */
  notReady: (waitedMs?: number) => Error;
  closed: () => Error;
  /** Refuses a segment whose ids reach past 2^53 (number ids only). */
  unsafe: (lastId: bigint) => Error;
  /** The error kept for callers when a reservation fails (and where it is logged). */
  failed: (err: unknown) => Error;
}

/** One segment mapped to ids: hands out `value`, `value + delta`, … while `value < max`. Mutable: the hot path bumps it. */
export class BufferSegment<T extends number | bigint> {
  constructor(
    public value: T,
    readonly max: T,
    readonly delta: T,
    /** Once `value` reaches this id the next segment starts loading; moved to `max` then, so it fires once per segment. */
    public loadNextAt: T,
  ) {}
}

/**
 * Leaf's adaptive step: a segment used up within `targetSegmentMs` doubles the next, one lasting twice that halves it,
 * within `[minStep, maxStep]`: never twice more than the last use, bounding what a stop wastes.
 */
export function nextStep(
  previous: number,
  sinceLastReserveMs: number,
  bounds: { minStep: number; maxStep: number; targetSegmentMs: number },
): number {
  const { minStep, maxStep, targetSegmentMs } = bounds;
  let step = previous;
  if (sinceLastReserveMs < targetSegmentMs) step = previous * 2;
  else if (sinceLastReserveMs >= 2 * targetSegmentMs) step = Math.floor(previous / 2);
  return Math.min(Math.max(step, minStep), Math.max(maxStep, minStep));
}

/** No ids: where a buffer starts and what a closed one holds. */
const EMPTY: ReservedIds = { first: 0n, count: 0, delta: 1 };

/** Index of the id whose handing out uses up `prefetchAt` of a segment of `count` ids. */
function loadPoint(count: number, prefetchAt: number): number {
  return Math.max(0, Math.ceil(count * prefetchAt) - 1);
}

/**
 * One entity's double buffer. `next()` is synchronous, written per id type in the subclasses (each call site
 * monomorphic). Ids grow within one buffer; ids left at close are wasted, never repeated.
 */
export abstract class DoubleBuffer<T extends number | bigint> {
  protected current: BufferSegment<T>;
  private spare: BufferSegment<T> | undefined;
  /** The reservation under way, if any (at most one, so segments come back in order). */
  private loading: Promise<void> | undefined;
  private failure: Error | undefined;
  private failedAt = 0;
  /** The last reservation's size and when it started (the adaptive size starts from them). */
  private last: { size: number; at: number } | undefined;
  private minSize: number | undefined;
  private closed = false;
  loads = 0;

  constructor(protected readonly options: DoubleBufferOptions) {
    this.minSize = options.minSize;
    this.current = this.toSegment(EMPTY);
  }

  /** The next id, synchronously; throws `notReady()` (and starts a reservation) when both segments are spent. */
  abstract next(): T;
  /** Maps reserved ids to a segment, refusing what the id type cannot hold. */
  protected abstract toSegment(ids: ReservedIds): BufferSegment<T>;
  protected abstract remaining(segment: BufferSegment<T>): number;
  /** Moves up to `count` ids from the segment into `out`. */
  protected abstract drain(segment: BufferSegment<T>, count: number, out: T[]): void;

  /** Loads the first segment; afterwards `next()` only throws when reservations fall behind. */
  async open(): Promise<void> {
    if (this.remaining(this.current) === 0 && !this.spare) await this.awaitSegment();
  }

  /** The next id, waiting up to `waitMs` for a segment. */
  async nextAsync(): Promise<T> {
    return (await this.take(1))[0];
  }

  /** `count` increasing ids, waiting up to `waitMs` for each segment it needs (ids already drawn are wasted if a wait fails). */
  async take(count: number): Promise<T[]> {
    const out: T[] = [];
    while (out.length < count) {
      if (this.closed) throw this.options.closed();
      const segment = this.current;
      if (this.remaining(segment) > 0) {
        this.drain(segment, count - out.length, out);
        if (segment.value > segment.loadNextAt) this.prefetch();
      } else if (!this.switchToSpare()) {
        await this.awaitSegment();
      }
    }
    return out;
  }

  /** Ids ready without another reservation. */
  get available(): number {
    return this.remaining(this.current) + (this.spare ? this.remaining(this.spare) : 0);
  }

  /** Stops reserving and waits for the reservation under way; ids still held are wasted, never handed out. */
  async close(): Promise<void> {
    this.closed = true;
    this.current = this.toSegment(EMPTY);
    this.spare = undefined;
    await this.loading;
  }

  /** Everything `next()` does when the current segment is spent. */
  protected nextSlow(): T {
    if (this.closed) throw this.options.closed();
    if (this.switchToSpare()) return this.next();
    if (!this.loading) {
      const failure = this.failureToThrow();
      if (failure) throw failure;
      void this.startLoad();
    }
    throw this.options.notReady();
  }

  /** Called once per segment, when its load point is passed. */
  protected prefetch(): void {
    this.current.loadNextAt = this.current.max;
    if (!this.spare) void this.startLoad();
  }

  private switchToSpare(): boolean {
    if (!this.spare) return false;
    this.current = this.spare;
    this.spare = undefined;
    return this.remaining(this.current) > 0;
  }

  /** The kept failure a caller gets instead of a new reservation, if any (once, or for `retryDelayMs`). */
  private failureToThrow(): Error | undefined {
    const failure = this.failure;
    if (this.options.retryDelayMs === undefined) this.failure = undefined;
    else if (this.options.clock.now() - this.failedAt >= this.options.retryDelayMs) return undefined;
    return failure;
  }

  private startLoad(): Promise<void> {
    if (this.loading || this.closed) return this.loading ?? Promise.resolve();
    const loading = this.load().finally(() => (this.loading = undefined));
    this.loading = loading;
    return loading;
  }

  /** Reserves the next segment into the spare slot; never rejects (a failure is kept for the callers). */
  private async load(): Promise<void> {
    const now = this.options.clock.now();
    const size =
      this.last === undefined
        ? this.minSize
        : nextStep(this.last.size, now - this.last.at, {
            minStep: this.minSize ?? 1,
            maxStep: this.options.maxSize,
            targetSegmentMs: this.options.targetSegmentMs,
          });
    try {
      const ids = await this.options.reserve(size);
      const segment = this.toSegment(ids);
      this.last = { size: ids.count, at: now };
      this.minSize = ids.minSize ?? this.minSize ?? ids.count;
      this.loads++;
      if (this.closed) return;
      this.spare = segment;
      this.failure = undefined;
    } catch (err) {
      if (this.closed) return;
      this.failure = this.options.failed(err);
      this.failedAt = this.options.clock.now();
    }
  }

  /** Waits until a segment is ready, or throws the reservation's failure or after `waitMs`. */
  private async awaitSegment(): Promise<void> {
    const { clock, waitMs } = this.options;
    const deadline = clock.now() + waitMs;
    for (;;) {
      if (this.closed) throw this.options.closed();
      if (this.spare) return;
      let loading = this.loading;
      if (!loading) {
        // A caller that waits tries again at once when a failure is reported only once.
        if (this.options.retryDelayMs === undefined) this.failure = undefined;
        const failure = this.failureToThrow();
        if (failure) throw failure;
        loading = this.startLoad();
      }
      const left = deadline - clock.now();
      if (left <= 0) throw this.options.notReady(waitMs);
      // Aborted (with a reason: abort() alone builds a DOMException's stack), the sleep leaves no timer.
      const abort = new AbortController();
      const loaded = await Promise.race([loading.then(() => true), clock.sleep(left, abort.signal).then(() => false)]);
      abort.abort('wait over');
      // Timed out as the load ended (a clock that jumped): let it land before deciding.
      if (!loaded) await new Promise<void>((resolve) => setImmediate(resolve));
      // The load this caller waited for failed: report why, do not retry at once.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the load and close() change both during the await.
      if (loaded && !this.spare && this.failure && !this.closed) {
        const failure = this.failure;
        if (this.options.retryDelayMs === undefined) this.failure = undefined;
        throw failure;
      }
    }
  }
}

/** Ids as JS numbers: a segment reaching past 2^53 is refused, so every id and bound is exact. */
export class NumberDoubleBuffer extends DoubleBuffer<number> {
  // The hot path: two compares and an add. Everything else is nextSlow.
  next(): number {
    const segment = this.current;
    const id = segment.value;
    if (id < segment.max) {
      segment.value = id + segment.delta;
      if (id >= segment.loadNextAt) this.prefetch();
      return id;
    }
    return this.nextSlow();
  }

  protected toSegment(ids: ReservedIds): BufferSegment<number> {
    const delta = BigInt(ids.delta);
    const max = ids.first + BigInt(ids.count) * delta;
    // `max` itself must be exact for `id < max` to be.
    if (max > BigInt(Number.MAX_SAFE_INTEGER)) throw this.options.unsafe(max - delta);
    const value = Number(ids.first);
    return new BufferSegment(
      value,
      Number(max),
      ids.delta,
      value + loadPoint(ids.count, this.options.prefetchAt) * ids.delta,
    );
  }

  protected remaining(segment: BufferSegment<number>): number {
    return segment.value < segment.max ? (segment.max - segment.value) / segment.delta : 0;
  }

  protected drain(segment: BufferSegment<number>, count: number, out: number[]): void {
    const n = Math.min(count, this.remaining(segment));
    let id = segment.value;
    for (let i = 0; i < n; i++, id += segment.delta) out.push(id);
    segment.value = id;
  }
}

/** Ids as bigint: any segment of the 63-bit line (a bigint add allocates: several times slower per id than numbers). */
export class BigIntDoubleBuffer extends DoubleBuffer<bigint> {
  next(): bigint {
    const segment = this.current;
    const id = segment.value;
    if (id < segment.max) {
      segment.value = id + segment.delta;
      if (id >= segment.loadNextAt) this.prefetch();
      return id;
    }
    return this.nextSlow();
  }

  protected toSegment(ids: ReservedIds): BufferSegment<bigint> {
    const delta = BigInt(ids.delta);
    return new BufferSegment(
      ids.first,
      ids.first + BigInt(ids.count) * delta,
      delta,
      ids.first + BigInt(loadPoint(ids.count, this.options.prefetchAt)) * delta,
    );
  }

  protected remaining(segment: BufferSegment<bigint>): number {
    return segment.value < segment.max ? Number((segment.max - segment.value) / segment.delta) : 0;
  }

  protected drain(segment: BufferSegment<bigint>, count: number, out: bigint[]): void {
    const n = Math.min(count, this.remaining(segment));
    let id = segment.value;
    for (let i = 0; i < n; i++, id += segment.delta) out.push(id);
    segment.value = id;
  }
}
