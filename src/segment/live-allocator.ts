import { UnavailableError } from '../errors';
import type { LineRaiser, Segment, SegmentAllocator, SqlSegmentAllocator } from './allocator';
import type { IncumbentDatabase, IncumbentKind } from './incumbent-rows';
import type { IdStride } from './stride';

/** What a reservation needs of its entity (an `EntityConfig` fits; `entities/` sits above this folder). */
export interface LiveEntity {
  readonly delta: number;
  readonly remainder: number;
  readonly incumbent?: { readonly kind: IncumbentKind; readonly key: string; readonly live: boolean } | null;
}

export interface LiveAllocatorOptions {
  /** Reservations of entities not live. */
  own: SegmentAllocator & LineRaiser;
  /** Where a live entity's segments are recorded (`current_offset`, `live_reserved`). */
  record: Pick<SqlSegmentAllocator, 'recordLive'>;
  /** The cached entity (no I/O). */
  entity(key: string): LiveEntity | undefined;
  /** The incumbents' databases this instance was given (IDPOOL_LEAF_DATABASE_URL, IDPOOL_TINYID_DATABASE_URL). */
  incumbents: ReadonlyMap<IncumbentKind, IncumbentDatabase>;
  stride: IdStride;
}

/**
 * The service's allocator: an entity in a live cutover reserves from its incumbent's row, which orders every
 * reservation of both systems, then records it on idpool's row (`recordLive`); one recorded after `--finish`
 * is dropped unused. A crash between the two wastes the segment, never repeats it. Others: `current_offset`.
 */
export class LiveAllocator implements SegmentAllocator, LineRaiser {
  constructor(private readonly options: LiveAllocatorOptions) {}

  async reserve(entityKey: string, size: number): Promise<Segment> {
    const entity = this.options.entity(entityKey);
    const source = entity?.incumbent;
    if (!entity || !source?.live) return this.options.own.reserve(entityKey, size);
    const db = this.options.incumbents.get(source.kind);
    if (!db)
      throw new UnavailableError(
        `entity "${entityKey}" is in a live cutover from ${source.kind}, and this instance has no IDPOOL_${source.kind.toUpperCase()}_DATABASE_URL to reserve from its row`,
        60,
      );
    if (this.options.stride.count !== 1)
      throw new UnavailableError(
        `entity "${entityKey}" is in a live cutover: its ids are the incumbent's, which a deployment stride (IDPOOL_CLUSTER_COUNT ${this.options.stride.count}) would respace`,
        60,
      );
    const ids = await db.reserve(source.key, size, entity);
    const line = this.options.stride.of(entity);
    // Leaf hands out [low, high); Tinyid the ids of (low, high] ≡ remainder (mod delta): `size` numbers either way.
    const start = source.kind === 'leaf' ? line.firstNumberFrom(ids.low) : line.numberAbove(ids.low);
    const segment = { start, end: start + BigInt(size) };
    if (!(await this.options.record.recordLive(entityKey, segment)))
      throw new UnavailableError(
        `entity "${entityKey}" left its live cutover while this reservation ran; the next one comes from idpool's own table`,
        1,
      );
    return segment;
  }

  peek(entityKey: string): Promise<bigint> {
    return this.options.own.peek(entityKey);
  }

  peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>> {
    return this.options.own.peekMany(entityKeys);
  }

  raise(entityKey: string, atLeast: bigint): Promise<bigint> {
    return this.options.own.raise(entityKey, atLeast);
  }
}
