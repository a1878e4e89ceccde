import type { Clock } from '../clock';
import { IdpoolError, NotFoundError } from '../errors';
import type { Logger } from '../logger';
import type { Segment, SegmentAllocator } from '../segment/allocator';
import type { IdStride } from '../segment/stride';
import { nextStep } from '../client/leased-ids';
import {
  GeneratorClosedError,
  InvalidCountError,
  SegmentReservationError,
  SegmentsNotReadyError,
  UnsupportedEntityError,
} from './errors';
import type { EntitySource, Settings } from './options';
import { type BufferedSegment, type Id, SegmentBuffer } from './segment-buffer';

/** Largest `take` count: bounds the array one call builds (~80 MB of numbers). */
export const MAX_TAKE = 10_000_000;

/**
 * Ids in-process from segments reserved in the database.
 *
 * `next()` is synchronous: it returns an id from the current segment or,
 * when both segments are spent, throws {@link SegmentsNotReadyError} and
 * starts the load. `nextAsync()` and `take()` wait up to `waitMs` instead.
 * Ids of one entity are strictly increasing within one generator; across
 * processes they are unique, not ordered.
 */
export interface IdGenerator<T extends Id = bigint> {
  /** Loads the first segment of each entity (and checks it exists); afterwards `next()` does not throw "not ready" until the load falls behind. */
  open(...entityKeys: string[]): Promise<void>;
  /** The next id, synchronously, with no I/O; throws {@link SegmentsNotReadyError} when both segments are spent. */
  next(entityKey: string): T;
  /** The next id, waiting up to `waitMs` for a segment when both are spent. */
  nextAsync(entityKey: string): Promise<T>;
  /** `count` increasing ids (1..10M), waiting up to `waitMs` for each segment it needs. */
  take(entityKey: string, count: number): Promise<T[]>;
  /** Stops loading, waits for reservations under way, closes the database it opened. Remaining ids are wasted. */
  close(): Promise<void>;
}

/** What a generator is built from. */
export interface Deps {
  allocator: SegmentAllocator;
  entities: EntitySource;
  idStride: IdStride;
  /** Distance between consecutive ids (`idStride.count`). */
  stride: number;
  clock: Clock;
  log: Logger;
  settings: Settings;
  /** Closes what the generator opened itself. */
  release: () => Promise<void>;
}

/**
 * A wait that can be called off: aborting ends the clock's sleep (clearing
 * the system clock's timer), so a finished wait leaves nothing behind to keep
 * the process alive.
 */
function timeout(clock: Clock, ms: number): { elapsed: Promise<void>; cancel(): void } {
  const abort = new AbortController();
  return { elapsed: clock.sleep(ms, abort.signal), cancel: () => abort.abort() };
}

/** Index of the id whose handing out uses up `prefetchAt` of a segment of `size`. */
export function loadPoint(size: number, prefetchAt: number): number {
  return Math.max(0, Math.ceil(size * prefetchAt) - 1);
}

/**
 * The double buffers and their loading; subclasses add the hot path for
 * their id type (a `number` and a `bigint` copy keep each one monomorphic).
 */
export abstract class BufferedIdGenerator<T extends Id> implements IdGenerator<T> {
  protected readonly buffers = new Map<string, SegmentBuffer<T>>();
  /**
   * The last entity looked up: most callers draw from one entity in a row,
   * and comparing the key with `===` (a pointer compare for the same string)
   * costs a fraction of a Map lookup: measured 3–4× on the whole `next()`.
   */
  private lastKey: string | undefined;
  private lastBuffer: SegmentBuffer<T> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(protected readonly deps: Deps) {}

  abstract next(entityKey: string): T;

  /** A segment with no ids left (the initial content of both slots). */
  protected abstract emptySegment(): BufferedSegment<T>;
  /** Maps a reserved range to ids, refusing what the id type cannot hold. */
  protected abstract toSegment(entityKey: string, range: Segment, size: number): BufferedSegment<T>;
  protected abstract remaining(segment: BufferedSegment<T>): number;
  /** Moves up to `count` ids from the segment into `out`. */
  protected abstract drain(segment: BufferedSegment<T>, count: number, out: T[]): void;
  protected abstract reachedLoadPoint(segment: BufferedSegment<T>): boolean;

  /** The entity's buffer, if it has one: the first step of every `next()`. */
  protected find(entityKey: string): SegmentBuffer<T> | undefined {
    if (entityKey === this.lastKey) return this.lastBuffer;
    const buffer = this.buffers.get(entityKey);
    if (buffer !== undefined) {
      this.lastKey = entityKey;
      this.lastBuffer = buffer;
    }
    return buffer;
  }

  async open(...entityKeys: string[]): Promise<void> {
    await Promise.all(
      entityKeys.map(async (key) => {
        const buffer = this.bufferFor(key);
        if (this.remaining(buffer.current()) === 0 && !buffer.nextReady)
          await this.awaitSegment(buffer, this.deps.clock.monotonic() + this.deps.settings.waitMs);
      }),
    );
  }

  async nextAsync(entityKey: string): Promise<T> {
    try {
      return this.next(entityKey);
    } catch (err) {
      if (!(err instanceof SegmentsNotReadyError)) throw err;
    }
    return (await this.take(entityKey, 1))[0];
  }

  async take(entityKey: string, count: number): Promise<T[]> {
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_TAKE) throw new InvalidCountError(count, MAX_TAKE);
    const out: T[] = [];
    while (out.length < count) {
      if (this.closed) throw new GeneratorClosedError();
      const buffer = this.bufferFor(entityKey);
      const segment = buffer.current();
      if (this.remaining(segment) > 0) {
        this.drain(segment, count - out.length, out);
        if (this.reachedLoadPoint(segment)) this.prefetch(buffer);
      } else if (!buffer.switchToNext()) {
        // Ids already drawn by this call are dropped if the wait fails:
        // wasted, never handed out twice.
        await this.awaitSegment(buffer, this.deps.clock.monotonic() + this.deps.settings.waitMs);
      }
    }
    return out;
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      const loads = [...this.buffers.values()].flatMap((b) => (b.loading ? [b.loading] : []));
      // With no buffer left every next() takes the slow path, which refuses.
      this.buffers.clear();
      this.lastKey = undefined;
      this.lastBuffer = undefined;
      await Promise.all(loads);
      await this.deps.release();
    })();
    return this.closing;
  }

  /** Everything `next()` does when the current segment is spent or the entity is new. */
  protected nextSlow(entityKey: string): T {
    if (this.closed) throw new GeneratorClosedError();
    const buffer = this.bufferFor(entityKey);
    if (this.remaining(buffer.current()) > 0 || buffer.switchToNext()) return this.next(entityKey);
    if (!buffer.loading) {
      this.throwRecentFailure(buffer);
      void this.startLoad(buffer);
    }
    throw new SegmentsNotReadyError(
      entityKey,
      `no ids ready for ${entityKey}: both segments are used up and the next is loading (use nextAsync/take to wait, or open() first)`,
    );
  }

  /** Called once per segment when its load point is passed. */
  protected prefetch(buffer: SegmentBuffer<T>): void {
    const segment = buffer.current();
    segment.loadNextAt = segment.max;
    if (!buffer.loading && !buffer.nextReady && !this.closed) void this.startLoad(buffer);
  }

  private bufferFor(entityKey: string): SegmentBuffer<T> {
    let buffer = this.buffers.get(entityKey);
    if (!buffer) {
      if (this.closed) throw new GeneratorClosedError();
      buffer = new SegmentBuffer<T>(entityKey, () => this.emptySegment());
      this.buffers.set(entityKey, buffer);
    }
    return buffer;
  }

  /** Waits until the buffer has a segment ready, or throws after `deadline` or on a failed load. */
  private async awaitSegment(buffer: SegmentBuffer<T>, deadline: number): Promise<void> {
    const { clock } = this.deps;
    for (;;) {
      if (this.closed) throw new GeneratorClosedError();
      if (buffer.nextReady) return;
      let loading = buffer.loading;
      if (!loading) {
        this.throwRecentFailure(buffer);
        loading = this.startLoad(buffer);
      }
      const left = deadline - clock.monotonic();
      if (left <= 0) {
        throw new SegmentsNotReadyError(
          buffer.entityKey,
          `no ids ready for ${buffer.entityKey} after waiting ${this.deps.settings.waitMs} ms for a segment`,
        );
      }
      const timer = timeout(clock, left);
      const settled = await Promise.race([loading.then(() => true), timer.elapsed.then(() => false)]);
      timer.cancel();
      // The load this caller waited for failed: report why, do not retry at once.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the load and close() change both during the await.
      if (settled && !buffer.nextReady && buffer.failure && !this.closed) throw buffer.failure;
    }
  }

  private throwRecentFailure(buffer: SegmentBuffer<T>): void {
    if (buffer.failure && this.deps.clock.monotonic() - buffer.failedAt < this.deps.settings.retryDelayMs)
      throw buffer.failure;
  }

  private startLoad(buffer: SegmentBuffer<T>): Promise<void> {
    const loading = this.load(buffer).finally(() => {
      buffer.loading = undefined;
    });
    buffer.loading = loading;
    return loading;
  }

  /** Reserves the next segment; never rejects (a failure is kept on the buffer for callers). */
  private async load(buffer: SegmentBuffer<T>): Promise<void> {
    // better-sqlite3 runs SQL synchronously: start it from the event loop,
    // never inside the next() call that asked for it.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const { allocator, clock, settings } = this.deps;
    const key = buffer.entityKey;
    try {
      if (this.closed) return;
      const now = clock.monotonic();
      if (buffer.configReadAt === undefined || now - buffer.configReadAt >= settings.configRefreshMs)
        await this.readConfig(buffer);
      const size =
        buffer.lastReserveAt === undefined
          ? buffer.minStep
          : nextStep(buffer.step, now - buffer.lastReserveAt, {
              minStep: buffer.minStep,
              maxStep: settings.maxStep,
              targetSegmentMs: settings.targetSegmentMs,
            });
      const range = await allocator.reserve(key, size);
      buffer.step = size;
      buffer.lastReserveAt = now;
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- close() may have run during the await.
      if (this.closed) return;
      buffer.install(this.toSegment(key, range, size));
      buffer.failure = undefined;
    } catch (err) {
      buffer.failure = err instanceof IdpoolError ? err : new SegmentReservationError(key, err);
      buffer.failedAt = clock.monotonic();
      this.deps.log.warn({ entityKey: key, err: buffer.failure.message }, 'segment reservation failed');
    }
  }

  private async readConfig(buffer: SegmentBuffer<T>): Promise<void> {
    const entity = await this.deps.entities.findLive(buffer.entityKey);
    if (!entity) throw new NotFoundError(`no entity with key "${buffer.entityKey}"`);
    if (entity.mode === 'snowflake')
      throw new UnsupportedEntityError(
        buffer.entityKey,
        'issues snowflake ids; the library hands out segment ids only',
      );
    if (entity.mode === 'trend') {
      throw new UnsupportedEntityError(
        buffer.entityKey,
        'is a trend entity; the library hands out monotonic segment ids only (use the service for shuffled ids)',
      );
    }
    if (entity.delta !== undefined && entity.delta !== 1)
      throw new UnsupportedEntityError(
        buffer.entityKey,
        `spaces its ids (delta ${entity.delta}, remainder ${entity.remainder ?? 0}); the library hands out consecutive numbers only (use the service)`,
      );
    buffer.minStep = entity.step;
    buffer.configReadAt = this.deps.clock.monotonic();
  }
}
