import type { EntityConfig } from '../entities/entity';
import { SqlEntityStore } from '../entities/entity-store';
import { type Clock, systemClock } from '../clock';
import { type Database, openDatabase } from '../db/database';
import { IdpoolError, InvalidRequestError, NotFoundError, UnavailableError } from '../errors';
import { type Logger, silentLogger } from '../logger';
import { type Segment, type SegmentAllocator, SqlSegmentAllocator } from '../segment/allocator';
import { ClusterMap } from '../segment/cluster';
import { checkClusterMapping } from '../segment/cluster-mapping';
import { nextStep } from './adaptive-step';
import { GeneratorClosedError, SegmentsNotReadyError, UnsafeNumberIdError } from './errors';
import { BufferedSegment, type Id, SegmentBuffer } from './segment-buffer';
import { MAX_SAFE_ID } from '../limits';

/** Where the library reads an entity's configuration (`EntityStore` in production). */
export interface EntitySource {
  findLive(entityKey: string): Promise<Pick<EntityConfig, 'mode' | 'step'> | undefined>;
}

export interface IdGeneratorOptions {
  /**
   * `mysql://user:pass@host:3306/db`, `postgres://user:pass@host:5432/db` or `sqlite:PATH`: the database holding
   * the `application` table the service uses. Ignored when `database` is given.
   */
  databaseUrl?: string;
  /** An already open database (see `openDatabase`); the generator does not close it. */
  database?: Database;
  /** Run schema migrations when opening `databaseUrl` (the service normally owns the schema). */
  migrate?: boolean;
  /**
   * `'bigint'` (default) or `'number'`. Number ids are handed out only from
   * segments whose every id is below 2^53; otherwise {@link UnsafeNumberIdError}.
   */
  ids?: 'bigint' | 'number';
  /** Must match the service's IDPOOL_CLUSTER_COUNT / _INDEX when both share entities. */
  clusterCount?: number;
  clusterIndex?: number;
  /** Share of a segment used before the next one starts loading (0 ≤ x < 1). */
  prefetchAt?: number;
  /** Upper bound of the adaptive step (it never goes below the entity's own step). */
  maxStep?: number;
  /** The adaptive step aims for one reservation per this many ms. */
  targetSegmentMs?: number;
  /** How long `nextAsync`/`take`/`open` wait for a segment before {@link SegmentsNotReadyError}. */
  waitMs?: number;
  /** After a failed reservation, callers get that error for this long before the next attempt. */
  retryDelayMs?: number;
  /** How often an entity's configuration (its step) is read again. */
  configRefreshMs?: number;
  clock?: Clock;
  log?: Logger;
  /** Seam for tests and wrappers: reserves segments (default: SQL on the database). */
  allocator?: SegmentAllocator;
  /** Seam for tests: entity configuration (default: the `application` table). */
  entities?: EntitySource;
}

/** Defaults, in one place; each says where its number comes from. */
export const DEFAULT_OPTIONS = {
  /** The service's embedded default, so the two share entities out of the box. */
  databaseUrl: 'sqlite:./idpool.db',
  ids: 'bigint',
  clusterCount: 1,
  clusterIndex: 0,
  /** Leaf starts the background load once 10% of the current segment is used. */
  prefetchAt: 0.1,
  /**
   * 10M: at 50M ids/s a segment still lasts 200 ms, hundreds of SQL round
   * trips; a stopped process wastes at most two segments (20M of a 2^63 line).
   */
  maxStep: 10_000_000,
  /** About one reservation a second per busy entity and process: negligible database load. */
  targetSegmentMs: 1000,
  /** Long enough for a reservation on a loaded database, short enough to fail a request visibly. */
  waitMs: 2000,
  /** Bounds retries against a database that is down to 10/s per entity. */
  retryDelayMs: 100,
  /** A changed step is picked up within this long; costs one SELECT per entity per interval at most. */
  configRefreshMs: 10_000,
} as const;

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

/** A reservation that failed for a reason other than an idpool error (database down, …). */
export class SegmentReservationError extends UnavailableError {
  constructor(
    readonly entityKey: string,
    override readonly cause: unknown,
  ) {
    super(`could not reserve a segment for ${entityKey}: ${String((cause as Error)?.message ?? cause)}`);
  }
}

type Settings = Required<Pick<IdGeneratorOptions, 'prefetchAt' | 'maxStep' | 'targetSegmentMs' | 'waitMs' | 'retryDelayMs' | 'configRefreshMs'>>;

interface Deps {
  allocator: SegmentAllocator;
  entities: EntitySource;
  cluster: ClusterMap;
  /** Distance between consecutive ids (the cluster count). */
  stride: number;
  clock: Clock;
  log: Logger;
  settings: Settings;
  /** Closes what the generator opened itself. */
  release: () => Promise<void>;
}


/**
 * A wait that can be called off. The system clock gets a real, cancellable
 * timer so a finished wait leaves nothing behind to keep the process alive;
 * an injected clock's `sleep` is used as it is (tests control its time).
 */
function timeout(clock: Clock, ms: number): { elapsed: Promise<void>; cancel(): void } {
  if (clock !== systemClock) return { elapsed: clock.sleep(ms), cancel: () => undefined };
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return { elapsed, cancel: () => clearTimeout(timer) };
}

/** Index of the id whose handing out uses up `prefetchAt` of a segment of `size`. */
function loadPoint(size: number, prefetchAt: number): number {
  return Math.max(0, Math.ceil(size * prefetchAt) - 1);
}

/**
 * The double buffers and their loading; subclasses add the hot path for
 * their id type (a `number` and a `bigint` copy keep each one monomorphic).
 */
abstract class BufferedIdGenerator<T extends Id> implements IdGenerator<T> {
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
        if (this.remaining(buffer.current()) === 0 && !buffer.nextReady) await this.awaitSegment(buffer, this.deps.clock.monotonic() + this.deps.settings.waitMs);
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
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_TAKE) throw new InvalidRequestError(`count must be an integer from 1 to ${MAX_TAKE}, got ${count}`);
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
      const loads = [...this.buffers.values()].map((b) => b.loading);
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
      this.startLoad(buffer);
    }
    throw new SegmentsNotReadyError(entityKey, `no ids ready for ${entityKey}: both segments are used up and the next is loading (use nextAsync/take to wait, or open() first)`);
  }

  /** Called once per segment when its load point is passed. */
  protected prefetch(buffer: SegmentBuffer<T>): void {
    const segment = buffer.current();
    segment.loadNextAt = segment.max;
    if (!buffer.loading && !buffer.nextReady && !this.closed) this.startLoad(buffer);
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
      if (!buffer.loading) {
        this.throwRecentFailure(buffer);
        this.startLoad(buffer);
      }
      const loading = buffer.loading!;
      const left = deadline - clock.monotonic();
      if (left <= 0) {
        throw new SegmentsNotReadyError(buffer.entityKey, `no ids ready for ${buffer.entityKey} after waiting ${this.deps.settings.waitMs} ms for a segment`);
      }
      const timer = timeout(clock, left);
      const settled = await Promise.race([loading.then(() => true), timer.elapsed.then(() => false)]);
      timer.cancel();
      // The load this caller waited for failed: report why, do not retry at once.
      if (settled && !buffer.nextReady && buffer.failure && !this.closed) throw buffer.failure;
    }
  }

  private throwRecentFailure(buffer: SegmentBuffer<T>): void {
    if (buffer.failure && this.deps.clock.monotonic() - buffer.failedAt < this.deps.settings.retryDelayMs) throw buffer.failure;
  }

  private startLoad(buffer: SegmentBuffer<T>): void {
    buffer.loading = this.load(buffer).finally(() => {
      buffer.loading = undefined;
    });
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
      if (buffer.configReadAt === undefined || now - buffer.configReadAt >= settings.configRefreshMs) await this.readConfig(buffer);
      const size =
        buffer.lastReserveAt === undefined
          ? buffer.minStep
          : nextStep(buffer.step, now - buffer.lastReserveAt, { minStep: buffer.minStep, maxStep: settings.maxStep, targetSegmentMs: settings.targetSegmentMs });
      const range = await allocator.reserve(key, size);
      buffer.step = size;
      buffer.lastReserveAt = now;
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
    const app = await this.deps.entities.findLive(buffer.entityKey);
    if (!app) throw new NotFoundError(`no entity with key "${buffer.entityKey}"`);
    if (app.mode === 'snowflake') throw new InvalidRequestError(`entity "${buffer.entityKey}" issues snowflake ids; the library hands out segment ids only`);
    if (app.mode === 'trend') {
      throw new InvalidRequestError(`entity "${buffer.entityKey}" is a trend entity; the library hands out monotonic segment ids only (use the service for shuffled ids)`);
    }
    buffer.minStep = app.step;
    buffer.configReadAt = this.deps.clock.monotonic();
  }
}

class NumberIdGenerator extends BufferedIdGenerator<number> {
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
    const max = this.deps.cluster.toId(range.end);
    if (max > MAX_SAFE_ID) throw new UnsafeNumberIdError(entityKey, this.deps.cluster.toId(range.end - 1n));
    const value = Number(this.deps.cluster.toId(range.start));
    return new BufferedSegment(value, Number(max), size, value + loadPoint(size, this.deps.settings.prefetchAt) * this.stride);
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

class BigIntIdGenerator extends BufferedIdGenerator<bigint> {
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
    const value = this.deps.cluster.toId(range.start);
    return new BufferedSegment(value, this.deps.cluster.toId(range.end), size, value + BigInt(loadPoint(size, this.deps.settings.prefetchAt)) * this.stride);
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

/** Without migrations, a database the service never ran on has no `application` table: say so plainly. */
async function requireSchema(db: Database): Promise<void> {
  try {
    await db.query('SELECT 1 FROM application LIMIT 1');
  } catch (err) {
    await db.close();
    throw new UnavailableError(
      `${db.description} has no application table (${String((err as Error)?.message ?? err)}): start the idpool service on it once, run "npm run migration:run", or pass migrate: true`,
    );
  }
}

function settingsFrom(options: IdGeneratorOptions): Settings {
  const s = {
    prefetchAt: options.prefetchAt ?? DEFAULT_OPTIONS.prefetchAt,
    maxStep: options.maxStep ?? DEFAULT_OPTIONS.maxStep,
    targetSegmentMs: options.targetSegmentMs ?? DEFAULT_OPTIONS.targetSegmentMs,
    waitMs: options.waitMs ?? DEFAULT_OPTIONS.waitMs,
    retryDelayMs: options.retryDelayMs ?? DEFAULT_OPTIONS.retryDelayMs,
    configRefreshMs: options.configRefreshMs ?? DEFAULT_OPTIONS.configRefreshMs,
  };
  if (!(s.prefetchAt >= 0 && s.prefetchAt < 1)) throw new InvalidRequestError(`prefetchAt must be at least 0 and below 1, got ${s.prefetchAt}`);
  if (!Number.isSafeInteger(s.maxStep) || s.maxStep < 1) throw new InvalidRequestError(`maxStep must be a positive integer, got ${s.maxStep}`);
  for (const name of ['targetSegmentMs', 'waitMs', 'retryDelayMs', 'configRefreshMs'] as const) {
    if (!Number.isFinite(s[name]) || s[name] < 0) throw new InvalidRequestError(`${name} must be a non-negative number of ms, got ${s[name]}`);
  }
  return s;
}

/**
 * Creates an in-process id generator over the service's `application` table.
 * Options are validated here, once; invalid ones throw {@link InvalidRequestError}.
 */
export async function createIdGenerator(options: IdGeneratorOptions & { ids: 'number' }): Promise<IdGenerator<number>>;
export async function createIdGenerator(options?: IdGeneratorOptions & { ids?: 'bigint' }): Promise<IdGenerator<bigint>>;
export async function createIdGenerator(options: IdGeneratorOptions = {}): Promise<IdGenerator<number> | IdGenerator<bigint>> {
  const settings = settingsFrom(options);
  const ids = options.ids ?? DEFAULT_OPTIONS.ids;
  if (ids !== 'bigint' && ids !== 'number') throw new InvalidRequestError(`ids must be 'bigint' or 'number', got ${String(ids)}`);
  const stride = options.clusterCount ?? DEFAULT_OPTIONS.clusterCount;
  let cluster: ClusterMap;
  try {
    cluster = new ClusterMap(stride, options.clusterIndex ?? DEFAULT_OPTIONS.clusterIndex);
  } catch (err) {
    throw new InvalidRequestError((err as Error).message);
  }
  let db: Database | undefined = options.database;
  let release = async (): Promise<void> => undefined;
  if (!db && !(options.allocator && options.entities)) {
    db = await openDatabase(options.databaseUrl ?? DEFAULT_OPTIONS.databaseUrl, { migrate: options.migrate ?? false });
    const opened = db;
    release = () => opened.close();
    if (!(options.migrate ?? false)) await requireSchema(opened);
  }
  if (db) {
    try {
      await checkClusterMapping(db, cluster.count, cluster.index, (options.clock ?? systemClock).now());
    } catch (err) {
      await release();
      throw err;
    }
  }
  const deps: Deps = {
    allocator: options.allocator ?? new SqlSegmentAllocator(db!),
    entities: options.entities ?? new SqlEntityStore(db!),
    cluster,
    stride,
    clock: options.clock ?? systemClock,
    log: options.log ?? silentLogger,
    settings,
    release,
  };
  return ids === 'number' ? new NumberIdGenerator(deps) : new BigIntIdGenerator(deps);
}
