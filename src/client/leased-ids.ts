/**
 * The SDK's leased buffer: Leaf's double buffer over segments the service
 * leases, with a number and a bigint subclass so each `next()` stays
 * monomorphic (a compare and an add). Long because the two hot paths are
 * written out twice on purpose, not because concerns mix.
 */
import { IdpoolClientError } from './errors';
import type { ClientClock } from './transport';

/** How a `trend` entity's leased segments are sized and fetched. */
export interface LeaseOptions {
  /** `'bigint'` (default) or `'number'`: number ids only from segments wholly below 2^53, else the lease fails. */
  ids?: 'bigint' | 'number';
  /** Share of a segment handed out before the next lease starts (0 ≤ x < 1). Default 0.1, as Leaf. */
  prefetchAt?: number;
  /** The first lease's size and the least one; default: the entity's step (the service's default size). */
  minSize?: number;
  /** Largest lease the adaptive size grows to. Default 10M, the service's limit. */
  maxSize?: number;
  /** The size adapts to one lease per this many ms. Default 1000. */
  targetSegmentMs?: number;
  /** How long `nextAsync`/`take` wait for a segment. Default 2000. */
  waitMs?: number;
}

/** A lease as `POST /apps/:key/segments` answers it. */
export interface LeaseAnswer {
  first: string;
  last: string;
  count: number;
  delta: number;
  remainder: number;
}

/** Asks the service for a segment of `size` ids (undefined: the entity's step). */
export type LeaseFetch = (size: number | undefined) => Promise<LeaseAnswer>;

/** Both segments are used up and the next lease has not arrived (yet): `next()` never waits. */
export class IdpoolLeaseNotReadyError extends IdpoolClientError {}

/** Defaults in one place. */
export const LEASE_DEFAULTS = {
  ids: 'bigint',
  /** Leaf starts its background load once 10% of the current segment is used. */
  prefetchAt: 0.1,
  /** The service's `MAX_LEASE_SIZE`. */
  maxSize: 10_000_000,
  /** About one lease a second per busy entity and process: negligible load on the service. */
  targetSegmentMs: 1000,
  waitMs: 2000,
} as const;

/**
 * Leaf's adaptive step: a segment used up faster than `targetSegmentMs`
 * doubles the next one, one that lasted more than twice as long halves it,
 * anything between keeps it; always within `[minStep, maxStep]`. Doubling
 * and halving converge on one reservation per target interval in a few
 * segments, and never ask for more than twice what the last interval used,
 * which bounds what a stopped process wastes.
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

/** One leased segment: hands out `value`, `value + delta`, … while `value < end`. Mutable: the hot path bumps it. */
class LeasedSegment<T extends number | bigint> {
  constructor(
    public value: T,
    readonly end: T,
    readonly delta: T,
    /** Once `value` passes this id the next lease starts; moved to `end` then, so it fires once. */
    public loadNextAt: T,
  ) {}
}

/**
 * Ids of one `trend` entity handed out in this process from segments the
 * service leased to it (`POST /apps/:key/segments`): Leaf's double buffer.
 * While the current segment is used, the next is leased in the background
 * once `prefetchAt` of it is gone; the lease size doubles while segments
 * last less than `targetSegmentMs` and halves when they last twice that.
 *
 * `next()` is synchronous, no I/O and no Promise: from a current segment it
 * is a compare and an add. Ids grow within this process; across processes
 * they are unique, not ordered (which is what `trend` promises). Ids left
 * when the process stops are wasted, never repeated.
 */
export abstract class LeasedIds<T extends number | bigint> {
  protected current: LeasedSegment<T>;
  private spare: LeasedSegment<T> | undefined;
  private loading: Promise<void> | undefined;
  private failure: Error | undefined;
  private size: number | undefined;
  /** The first lease's size: the least the adaptive size goes to when `minSize` is not set. */
  private baseSize: number | undefined;
  private lastLeaseAt: number | undefined;
  private closed = false;
  /** Leases taken so far (for tests and stats). */
  leases = 0;
  protected readonly settings: Required<Omit<LeaseOptions, 'ids' | 'minSize'>> & { minSize: number | undefined };

  constructor(
    readonly entityKey: string,
    private readonly fetchLease: LeaseFetch,
    private readonly clock: ClientClock,
    options: LeaseOptions = {},
  ) {
    this.settings = leaseSettings(options);
    this.current = this.emptySegment();
  }

  /** The next id, synchronously; throws {@link IdpoolLeaseNotReadyError} (and starts a lease) when both segments are spent. */
  abstract next(): T;

  protected abstract emptySegment(): LeasedSegment<T>;
  protected abstract toSegment(answer: LeaseAnswer): LeasedSegment<T>;
  protected abstract remaining(segment: LeasedSegment<T>): number;

  /** Loads the first segment; afterwards `next()` only throws when leases fall behind. */
  async open(): Promise<void> {
    if (this.remaining(this.current) === 0 && !this.spare) await this.awaitSegment();
  }

  /** The next id, waiting up to `waitMs` for a segment. */
  async nextAsync(): Promise<T> {
    for (;;) {
      if (this.closed) throw new IdpoolClientError(`leased ids of ${this.entityKey} are closed`);
      if (this.remaining(this.current) > 0 || this.switchToSpare()) return this.next();
      await this.awaitSegment();
    }
  }

  /** `count` increasing ids, waiting up to `waitMs` for each segment it needs (ids already drawn are wasted if a wait fails). */
  async take(count: number): Promise<T[]> {
    if (!Number.isSafeInteger(count) || count < 1)
      throw new TypeError(`count must be a positive integer, got ${count}`);
    const out: T[] = [];
    while (out.length < count) {
      try {
        // Synchronously from the buffer while it lasts: no Promise per id.
        while (out.length < count) out.push(this.next());
      } catch (err) {
        if (!(err instanceof IdpoolLeaseNotReadyError)) throw err;
        await this.awaitSegment();
      }
    }
    return out;
  }

  /** Ids ready in this process without another lease. */
  get available(): number {
    return this.remaining(this.current) + (this.spare ? this.remaining(this.spare) : 0);
  }

  /** Stops leasing; ids still held are wasted, never handed out. */
  async close(): Promise<void> {
    this.closed = true;
    this.current = this.emptySegment();
    this.spare = undefined;
    await this.loading;
  }

  /** Everything `next()` does when the current segment is spent. */
  protected nextSlow(): T {
    if (this.closed) throw new IdpoolClientError(`leased ids of ${this.entityKey} are closed`);
    if (this.switchToSpare()) return this.next();
    if (this.failure && !this.loading) {
      const failure = this.failure;
      this.failure = undefined;
      throw failure;
    }
    this.startLease();
    throw new IdpoolLeaseNotReadyError(
      `no leased ids ready for ${this.entityKey}: both segments are used up and the next lease is on its way (use nextAsync/take to wait, or open() first)`,
    );
  }

  /** Called once per segment, when its load point is passed. */
  protected prefetch(): void {
    this.current.loadNextAt = this.current.end;
    if (!this.spare) this.startLease();
  }

  private switchToSpare(): boolean {
    if (!this.spare) return false;
    this.current = this.spare;
    this.spare = undefined;
    if (this.remaining(this.current) === 0) return false;
    return true;
  }

  private startLease(): void {
    if (this.loading || this.closed) return;
    this.loading = this.lease().finally(() => (this.loading = undefined));
  }

  /** Leases the next segment into the spare slot; never rejects (a failure is kept for the callers). */
  private async lease(): Promise<void> {
    const now = this.clock.now();
    const { minSize, maxSize, targetSegmentMs } = this.settings;
    const size =
      this.size === undefined || this.lastLeaseAt === undefined
        ? minSize
        : nextStep(this.size, now - this.lastLeaseAt, {
            minStep: minSize ?? this.baseSize ?? 1,
            maxStep: maxSize,
            targetSegmentMs,
          });
    try {
      const answer = await this.fetchLease(size);
      const segment = this.toSegment(answer);
      this.size = answer.count;
      this.baseSize ??= answer.count;
      this.lastLeaseAt = now;
      this.leases++;
      if (this.closed) return;
      this.spare = segment;
      this.failure = undefined;
    } catch (err) {
      this.failure = err instanceof Error ? err : new IdpoolClientError(String(err));
    }
  }

  /** Waits until a segment is ready, or throws the lease's failure or after `waitMs`. */
  private async awaitSegment(): Promise<void> {
    const deadline = this.clock.now() + this.settings.waitMs;
    for (;;) {
      if (this.closed) throw new IdpoolClientError(`leased ids of ${this.entityKey} are closed`);
      if (this.spare) return;
      if (!this.loading) {
        this.failure = undefined;
        this.startLease();
      }
      const left = deadline - this.clock.now();
      if (left <= 0)
        throw new IdpoolLeaseNotReadyError(`no leased ids for ${this.entityKey} within ${this.settings.waitMs} ms`);
      const loading = this.loading ?? Promise.resolve();
      const loaded = await Promise.race([loading.then(() => true), this.clock.sleep(left).then(() => false)]);
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the lease fills the spare slot during the await.
      if (loaded && !this.spare && this.failure) {
        const failure = this.failure;
        this.failure = undefined;
        throw failure;
      }
    }
  }

  /** Checks a lease answer's shape; the ids as bigint. */
  protected parse(answer: unknown): { first: bigint; last: bigint; delta: number; count: number } {
    const a = (answer ?? {}) as Partial<Record<keyof LeaseAnswer, unknown>>;
    if (!(
      typeof a.first === 'string' &&
      /^\d{1,20}$/.test(a.first) &&
      typeof a.last === 'string' &&
      /^\d{1,20}$/.test(a.last) &&
      typeof a.delta === 'number' &&
      Number.isSafeInteger(a.delta) &&
      a.delta >= 1 &&
      typeof a.count === 'number' &&
      Number.isSafeInteger(a.count) &&
      a.count >= 1
    ))
      throw new IdpoolClientError(`the lease of ${this.entityKey} came back malformed`);
    const first = BigInt(a.first);
    const last = BigInt(a.last);
    if (last - first !== BigInt(a.count - 1) * BigInt(a.delta))
      throw new IdpoolClientError(`the lease of ${this.entityKey} does not hold ${a.count} ids`);
    return { first, last, delta: a.delta, count: a.count };
  }

  /** Index of the id whose handing out uses up `prefetchAt` of a segment of `count` ids. */
  protected loadPoint(count: number): number {
    return Math.max(0, Math.ceil(count * this.settings.prefetchAt) - 1);
  }
}

/** Ids as JS numbers: every segment is checked to lie below 2^53. */
export class NumberLeasedIds extends LeasedIds<number> {
  // The hot path: two compares and an add. Everything else is nextSlow.
  next(): number {
    const segment = this.current;
    const id = segment.value;
    if (id < segment.end) {
      segment.value = id + segment.delta;
      if (id >= segment.loadNextAt) this.prefetch();
      return id;
    }
    return this.nextSlow();
  }

  protected emptySegment(): LeasedSegment<number> {
    return new LeasedSegment(0, 0, 1, 0);
  }

  protected toSegment(answer: LeaseAnswer): LeasedSegment<number> {
    const { first, last, delta, count } = this.parse(answer);
    // `end` itself must be exact for `id < end` to be.
    if (last + BigInt(delta) > BigInt(Number.MAX_SAFE_INTEGER))
      throw new IdpoolClientError(`ids of ${this.entityKey} reach ${last}, past 2^53: use ids: 'bigint'`);
    const value = Number(first);
    return new LeasedSegment(value, Number(last) + delta, delta, value + this.loadPoint(count) * delta);
  }

  protected remaining(segment: LeasedSegment<number>): number {
    return segment.value < segment.end ? (segment.end - segment.value) / segment.delta : 0;
  }
}

/** Ids as bigint: any segment of the 63-bit line (about 6× slower per id than numbers: a bigint add allocates). */
export class BigIntLeasedIds extends LeasedIds<bigint> {
  next(): bigint {
    const segment = this.current;
    const id = segment.value;
    if (id < segment.end) {
      segment.value = id + segment.delta;
      if (id >= segment.loadNextAt) this.prefetch();
      return id;
    }
    return this.nextSlow();
  }

  protected emptySegment(): LeasedSegment<bigint> {
    return new LeasedSegment(0n, 0n, 1n, 0n);
  }

  protected toSegment(answer: LeaseAnswer): LeasedSegment<bigint> {
    const { first, last, delta, count } = this.parse(answer);
    const step = BigInt(delta);
    return new LeasedSegment(first, last + step, step, first + BigInt(this.loadPoint(count)) * step);
  }

  protected remaining(segment: LeasedSegment<bigint>): number {
    return segment.value < segment.end ? Number((segment.end - segment.value) / segment.delta) : 0;
  }
}

/** The options, defaulted and checked once (TypeError naming the option). */
function leaseSettings(options: LeaseOptions): LeasedIds<number>['settings'] {
  const s = {
    prefetchAt: options.prefetchAt ?? LEASE_DEFAULTS.prefetchAt,
    minSize: options.minSize,
    maxSize: options.maxSize ?? LEASE_DEFAULTS.maxSize,
    targetSegmentMs: options.targetSegmentMs ?? LEASE_DEFAULTS.targetSegmentMs,
    waitMs: options.waitMs ?? LEASE_DEFAULTS.waitMs,
  };
  if (!(s.prefetchAt >= 0 && s.prefetchAt < 1))
    throw new TypeError(`lease.prefetchAt must be in [0, 1), got ${s.prefetchAt}`);
  if (s.minSize !== undefined && (!Number.isSafeInteger(s.minSize) || s.minSize < 1))
    throw new TypeError(`lease.minSize must be a positive integer, got ${s.minSize}`);
  if (!Number.isSafeInteger(s.maxSize) || s.maxSize < (s.minSize ?? 1))
    throw new TypeError(`lease.maxSize must be an integer of at least minSize, got ${s.maxSize}`);
  for (const name of ['targetSegmentMs', 'waitMs'] as const) {
    if (!Number.isFinite(s[name]) || s[name] < 0)
      throw new TypeError(`lease.${name} must be a non-negative number of ms`);
  }
  return s;
}

/** A leased buffer of the id type `options.ids` asks for. */
export function leasedIds(
  entityKey: string,
  fetchLease: LeaseFetch,
  clock: ClientClock,
  options: LeaseOptions = {},
): LeasedIds<number> | LeasedIds<bigint> {
  const ids: string = options.ids ?? LEASE_DEFAULTS.ids;
  if (ids !== 'bigint' && ids !== 'number') throw new TypeError(`lease.ids must be 'bigint' or 'number', got ${ids}`);
  return ids === 'number'
    ? new NumberLeasedIds(entityKey, fetchLease, clock, options)
    : new BigIntLeasedIds(entityKey, fetchLease, clock, options);
}
