/** The SDK's leased buffer: the double buffer over segments the service leases. */
import {
  BigIntDoubleBuffer,
  type DoubleBuffer,
  type DoubleBufferOptions,
  NumberDoubleBuffer,
  type ReservedIds,
} from '../double-buffer/double-buffer';
import { IdpoolClientError, IdpoolInvalidRequestError } from './errors';
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
 * Ids of one `trend` entity from segments the service leased to it (`POST /apps/:key/segments`), through Leaf's double
 * buffer (`double-buffer/`): the next segment is leased once `prefetchAt` of the current one is gone, the size adapting
 * to `targetSegmentMs`. `next()` is a synchronous compare and add. Ids grow within this process and are unique, not
 * ordered, across processes (what `trend` promises); ids left at exit are wasted, never repeated.
 */
export abstract class LeasedIds<T extends number | bigint> {
  protected abstract readonly buffer: DoubleBuffer<T>;

  constructor(readonly entityKey: string) {}

  /** The next id, synchronously; throws {@link IdpoolLeaseNotReadyError} (and starts a lease) when both segments are spent. */
  abstract next(): T;

  /** Loads the first segment; afterwards `next()` only throws when leases fall behind. */
  open(): Promise<void> {
    return this.buffer.open();
  }

  /** The next id, waiting up to `waitMs` for a segment. */
  nextAsync(): Promise<T> {
    return this.buffer.nextAsync();
  }

  /** `count` increasing ids, waiting up to `waitMs` for each segment it needs (ids already drawn are wasted if a wait fails). */
  async take(count: number): Promise<T[]> {
    if (!Number.isSafeInteger(count) || count < 1)
      throw new TypeError(`count must be a positive integer, got ${count}`);
    return this.buffer.take(count);
  }

  /** Ids ready in this process without another lease. */
  get available(): number {
    return this.buffer.available;
  }

  /** Leases taken so far (for tests and stats). */
  get leases(): number {
    return this.buffer.loads;
  }

  /** Stops leasing; ids still held are wasted, never handed out. */
  close(): Promise<void> {
    return this.buffer.close();
  }
}

/** Ids as JS numbers: every segment is checked to lie below 2^53. */
export class NumberLeasedIds extends LeasedIds<number> {
  protected readonly buffer: NumberDoubleBuffer;

  constructor(entityKey: string, fetchLease: LeaseFetch, clock: ClientClock, options: LeaseOptions = {}) {
    super(entityKey);
    this.buffer = new NumberDoubleBuffer(bufferOptions(entityKey, fetchLease, clock, options));
  }

  next(): number {
    return this.buffer.next();
  }
}

/** Ids as bigint: any segment of the 63-bit line (about 6× slower per id than numbers: a bigint add allocates). */
export class BigIntLeasedIds extends LeasedIds<bigint> {
  protected readonly buffer: BigIntDoubleBuffer;

  constructor(entityKey: string, fetchLease: LeaseFetch, clock: ClientClock, options: LeaseOptions = {}) {
    super(entityKey);
    this.buffer = new BigIntDoubleBuffer(bufferOptions(entityKey, fetchLease, clock, options));
  }

  next(): bigint {
    return this.buffer.next();
  }
}

const isId = (v: unknown): v is string => typeof v === 'string' && /^\d{1,20}$/.test(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;

function parse(entityKey: string, answer: unknown): ReservedIds {
  const a = (answer ?? {}) as Partial<Record<keyof LeaseAnswer, unknown>>;
  if (!(isId(a.first) && isId(a.last) && isCount(a.delta) && isCount(a.count)))
    throw new IdpoolClientError(`the lease of ${entityKey} came back malformed`);
  const first = BigInt(a.first);
  if (BigInt(a.last) - first !== BigInt(a.count - 1) * BigInt(a.delta))
    throw new IdpoolClientError(`the lease of ${entityKey} does not hold ${a.count} ids`);
  return { first, count: a.count, delta: a.delta };
}

/** The double buffer over `fetchLease`, with the SDK's errors. */
function bufferOptions(
  entityKey: string,
  fetchLease: LeaseFetch,
  clock: ClientClock,
  options: LeaseOptions,
): DoubleBufferOptions {
  const lease = cappedAtGranted(fetchLease);
  return {
    reserve: async (size) => parse(entityKey, await lease(size)),
    clock,
    ...leaseSettings(options),
    notReady: (waitedMs) =>
      new IdpoolLeaseNotReadyError(
        waitedMs === undefined
          ? `no leased ids ready for ${entityKey}: both segments are used up and the next lease is on its way (use nextAsync/take to wait, or open() first)`
          : `no leased ids for ${entityKey} within ${waitedMs} ms`,
      ),
    closed: () => new IdpoolClientError(`leased ids of ${entityKey} are closed`),
    unsafe: (lastId) => new IdpoolClientError(`ids of ${entityKey} reach ${lastId}, past 2^53: use ids: 'bigint'`),
    failed: (err) => (err instanceof Error ? err : new IdpoolClientError(String(err))),
  };
}

/**
 * An entity leases no more than its `maxSizePerSecond` at once (400 above it), a limit the client is not told: a size
 * refused once a smaller one was granted caps the sizes at the largest granted and is asked again at it, so a default
 * `trend` entity (5,000 a second) leases 4,000-id segments instead of failing at its first 8,000.
 */
function cappedAtGranted(fetchLease: LeaseFetch): LeaseFetch {
  let granted = 0;
  let cap = Number.POSITIVE_INFINITY;
  const lease = async (size: number | undefined) => {
    const answer = await fetchLease(size);
    // Read before `parse` checks the answer: a malformed one (`null`) must reach its error, not a TypeError here.
    const count: unknown = (answer as Partial<LeaseAnswer> | null)?.count;
    if (isCount(count)) granted = Math.max(granted, count);
    return answer;
  };
  return async (size) => {
    const ask = size === undefined ? undefined : Math.min(size, cap);
    try {
      return await lease(ask);
    } catch (err) {
      if (!(err instanceof IdpoolInvalidRequestError) || ask === undefined || granted === 0 || ask <= granted)
        throw err;
      cap = granted;
      return lease(granted);
    }
  };
}

/** Defaulted and checked once: a TypeError names the option. */
function leaseSettings(options: LeaseOptions) {
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
  ...args: ConstructorParameters<typeof NumberLeasedIds>
): LeasedIds<number> | LeasedIds<bigint> {
  const ids: string = args[3]?.ids ?? LEASE_DEFAULTS.ids;
  if (ids !== 'bigint' && ids !== 'number') throw new TypeError(`lease.ids must be 'bigint' or 'number', got ${ids}`);
  return ids === 'number' ? new NumberLeasedIds(...args) : new BigIntLeasedIds(...args);
}
