import type { TakeOptions } from '../client/client';
import type { Clock } from '../clock';
import { IdpoolError, NotFoundError } from '../errors';
import type { Logger } from '../logger';
import type { DoubleBuffer, DoubleBufferOptions } from '../double-buffer/double-buffer';
import type { SegmentAllocator } from '../segment/allocator';
import type { IdStride } from '../segment/stride';
import type { NumberEntity } from '../pool/period-pools';
import type { LocalNumbers } from './numbers';
import {
  GeneratorClosedError,
  InvalidCountError,
  InvalidOptionError,
  SegmentReservationError,
  SegmentsNotReadyError,
  UnsafeNumberIdError,
  UnsupportedEntityError,
} from './errors';
import type { EntitySource, LiveEntity, Settings } from './options';

/** An id as the library hands it out: `bigint` by default, `number` when proven below 2^53. */
export type Id = bigint | number;

/** Largest `take` count: bounds the array one call builds (~80 MB of numbers). */
export const MAX_TAKE = 10_000_000;
/** Whether `count` is one `take` and `numbers` accept: an integer from 1 to {@link MAX_TAKE}. */
export const isTakeCount = (count: number) => Number.isSafeInteger(count) && count >= 1 && count <= MAX_TAKE;

/**
 * Ids in-process from segments reserved in the database. Ids of one entity
 * increase strictly within one generator; across processes they are unique, not ordered.
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
  /**
   * `count` business numbers (`INV20261128-000123`) of an entity with a `format` (docs/numbers.md), their period
   * by this process's clock (the service's in service mode); the other methods refuse such an entity, this one any
   * other ({@link UnsupportedEntityError}). A gapless series is the service's alone, with `options` (its `reference`,
   * the Idempotency-Key every attempt of one call carries): with a database, a gapless entity or `options` are refused.
   */
  numbers(entityKey: string, count?: number, options?: TakeOptions): Promise<string[]>;
  /** Stops loading, waits for reservations under way, closes the database it opened. Remaining ids are wasted. */
  close(): Promise<void>;
}

export interface Deps {
  allocator: SegmentAllocator;
  entities: EntitySource;
  idStride: IdStride;
  clock: Clock;
  log: Logger;
  settings: Settings;
  /** Closes what the generator opened itself. */
  release: () => Promise<void>;
  /** Business numbers on the process clock; undefined without a database (the allocator seam alone). */
  numbers?: LocalNumbers;
}

/** One double buffer (`double-buffer/`) per entity over SQL reservations. */
export class BufferedIdGenerator<T extends Id> implements IdGenerator<T> {
  private readonly buffers = new Map<string, DoubleBuffer<T>>();
  /** The last entity looked up: most callers draw from one in a row, and `===` beats a Map lookup 3–4× on `next()`. */
  private lastKey: string | undefined;
  private lastBuffer: DoubleBuffer<T> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly numberEntities = new Map<string, { entity: NumberEntity; readAt: number }>();

  constructor(
    private readonly deps: Deps,
    private readonly Buffer: new (options: DoubleBufferOptions) => DoubleBuffer<T>,
  ) {}

  // The hot path: a key compare, then the buffer's two compares and an add.
  next(entityKey: string): T {
    const buffer = entityKey === this.lastKey ? this.lastBuffer : undefined;
    return (buffer ?? this.bufferFor(entityKey)).next();
  }

  async open(...entityKeys: string[]): Promise<void> {
    await Promise.all(entityKeys.map((key) => this.bufferFor(key).open()));
  }

  async nextAsync(entityKey: string): Promise<T> {
    return this.bufferFor(entityKey).nextAsync();
  }

  async take(entityKey: string, count: number): Promise<T[]> {
    if (!isTakeCount(count)) throw new InvalidCountError(count, MAX_TAKE);
    return this.bufferFor(entityKey).take(count);
  }

  async numbers(entityKey: string, count = 1, options: TakeOptions = {}): Promise<string[]> {
    if (!isTakeCount(count)) throw new InvalidCountError(count, MAX_TAKE);
    if (this.closed) throw new GeneratorClosedError();
    const given = (['reference', 'idempotencyKey'] as const).find((o) => options[o] !== undefined);
    if (given)
      throw new InvalidOptionError(
        given,
        `${given} goes with a gapless series, whose numbers the service issues: use the service mode (createIdGenerator({ service }))`,
      );
    const takes = this.deps.numbers;
    if (!takes)
      throw new UnsupportedEntityError(entityKey, 'has business numbers, which need a database (no numberCounter)');
    const entity = await this.numberEntity(entityKey);
    return takes.take(entity, count);
  }

  /** The entity's number settings, fixed once registered: read once (its step at most every `configRefreshMs`). */
  private async numberEntity(entityKey: string): Promise<NumberEntity> {
    const known = this.numberEntities.get(entityKey);
    const now = this.deps.clock.monotonic();
    if (known && now - known.readAt < this.deps.settings.configRefreshMs) return known.entity;
    const found = await this.deps.entities.findLive(entityKey);
    if (!found) throw new NotFoundError(`no entity with key "${entityKey}"`);
    const { mode, step, numbers } = found;
    if (!numbers)
      throw new UnsupportedEntityError(entityKey, 'has no business-number format; use next, nextAsync or take');
    if (found.gapless)
      throw new UnsupportedEntityError(
        entityKey,
        'is a gapless series: its numbers are issued by the service, each in its ledger; use the service mode (createIdGenerator({ service }))',
      );
    const entity: NumberEntity = { key: entityKey, mode, step, numbers, maxSizePerTimes: 0 };
    this.numberEntities.set(entityKey, { entity, readAt: now });
    return entity;
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      const buffers = [...this.buffers.values()];
      // With no buffer left every call looks its entity up again, which refuses.
      this.buffers.clear();
      this.lastKey = this.lastBuffer = undefined;
      await Promise.all(buffers.map((b) => b.close()));
      await this.deps.release();
    })();
    return this.closing;
  }

  private bufferFor(entityKey: string): DoubleBuffer<T> {
    let buffer = this.buffers.get(entityKey);
    if (!buffer) {
      if (this.closed) throw new GeneratorClosedError();
      buffer = new this.Buffer(this.bufferOptions(entityKey));
      this.buffers.set(entityKey, buffer);
    }
    this.lastKey = entityKey;
    this.lastBuffer = buffer;
    return buffer;
  }

  private bufferOptions(entityKey: string): DoubleBufferOptions {
    const { clock, settings, log } = this.deps;
    return {
      reserve: this.reserver(entityKey),
      clock: { now: () => clock.monotonic(), sleep: (ms, signal) => clock.sleep(ms, signal) },
      ...settings,
      maxSize: settings.maxStep,
      notReady: (waitedMs) =>
        new SegmentsNotReadyError(
          entityKey,
          waitedMs === undefined
            ? `no ids ready for ${entityKey}: both segments are used up and the next is loading (use nextAsync/take to wait, or open() first)`
            : `no ids ready for ${entityKey} after waiting ${waitedMs} ms for a segment`,
        ),
      closed: () => new GeneratorClosedError(),
      unsafe: (lastId) => new UnsafeNumberIdError(entityKey, lastId),
      failed: (err) => {
        const failure = err instanceof IdpoolError ? err : new SegmentReservationError(entityKey, err);
        log.warn({ entityKey, err: failure.message }, 'segment reservation failed');
        return failure;
      },
    };
  }

  /** One entity's reservations: its configuration read at most every `configRefreshMs`, each segment mapped to ids by the stride. */
  private reserver(entityKey: string): DoubleBufferOptions['reserve'] {
    const { allocator, clock, settings, idStride } = this.deps;
    let minStep = 0;
    let configReadAt: number | undefined;
    return async (size) => {
      // better-sqlite3 runs SQL synchronously: start it from the event loop, not inside the next() that asked.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.closed) throw new GeneratorClosedError();
      const now = clock.monotonic();
      if (configReadAt === undefined || now - configReadAt >= settings.configRefreshMs) {
        minStep = await this.readConfig(entityKey);
        configReadAt = clock.monotonic();
      }
      const count = Math.min(Math.max(size ?? minStep, minStep), Math.max(settings.maxStep, minStep));
      const range = await allocator.reserve(entityKey, count);
      return { first: idStride.toId(range.start), count, delta: idStride.count, minSize: minStep };
    };
  }

  /** The entity's step: the least segment size. */
  private async readConfig(entityKey: string): Promise<number> {
    const entity = await this.deps.entities.findLive(entityKey);
    if (!entity) throw new NotFoundError(`no entity with key "${entityKey}"`);
    const refused = refusal(entity);
    if (refused !== undefined) throw new UnsupportedEntityError(entityKey, refused);
    return entity.step;
  }
}

/** Why the library hands out no segment ids of this entity, if it does not. */
function refusal(entity: LiveEntity): string | undefined {
  if (entity.mode === 'snowflake') return 'issues snowflake ids; the library hands out segment ids only';
  if (entity.mode === 'trend')
    return 'is a trend entity; the library hands out monotonic segment ids only (use the service for shuffled ids)';
  if (entity.numbers)
    return `hands out business numbers (${entity.numbers.format}), strings: use numbers(entityKey, count)`;
  if (entity.delta !== undefined && entity.delta !== 1)
    return `spaces its ids (delta ${entity.delta}, remainder ${entity.remainder ?? 0}); the library hands out consecutive numbers only (use the service)`;
  return undefined;
}
