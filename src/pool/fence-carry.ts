import type { EntityCatalog } from '../entities/registry';
import type { Segment, SegmentAllocator } from '../segment/allocator';
import type { IdStride } from '../segment/stride';
import type { PoolStore } from './pool-store';
import type { RefillEvents } from './refill-events';

export interface FenceCarrierOptions {
  entities: Pick<EntityCatalog, 'get'>;
  allocator: Pick<SegmentAllocator, 'reserve' | 'peek'>;
  store: Pick<PoolStore, 'fence'>;
  stride: IdStride;
  events: Pick<RefillEvents, 'fenceRefused' | 'databaseBehind'>;
}

/**
 * Carries an entity whose database went back (restored from a backup,
 * failed over to a lagging replica) past its Redis fence, the highest id
 * ever pushed: one reservation of the gap, whatever the distance, and
 * `database_behind` once per episode. Two callers, one mechanism: the
 * refiller when the fence refused its segment, and the fence check
 * (`fence-check.ts`) when it finds the offset behind before any refill.
 * Both hold the entity's refill lock, so no other refill of it reserves or
 * pushes meanwhile and the gap is carried once.
 */
export class FenceCarrier {
  /** Entities found behind, until a push is accepted or a check finds them past the fence again (one alarm per episode). */
  private readonly behind = new Set<string>();

  constructor(private readonly options: FenceCarrierOptions) {}

  /** The first number above `fence` on the entity's line: an offset below it is behind. */
  numberAbove(entityKey: string, fence: bigint): bigint {
    const entity = this.options.entities.get(entityKey);
    return (entity ? this.options.stride.of(entity) : this.options.stride).numberAbove(fence);
  }

  /** A push was accepted, or a check found the offset past the fence: the episode, if any, is over. */
  caughtUp(entityKey: string): void {
    this.behind.delete(entityKey);
  }

  /**
   * A segment was refused by the fence. Either this refiller is stale (it
   * stalled past its lock TTL, or its push was retried: the database had
   * already reserved past the fence, so the segment lies at or below it) and
   * the segment is dropped (`fence_refused`), or the database is behind the
   * fence and is carried past it; a segment reaching above the fence was
   * reserved by a database behind it, and that reservation carried it.
   * Returns true when the database was behind.
   */
  async afterRefusal(entityKey: string, refused: Segment): Promise<boolean> {
    // The refused segment started at the offset the database had.
    if (await this.carryIfBehind(entityKey, refused.start, refused)) return true;
    this.options.events.fenceRefused(entityKey, refused.start, refused.end);
    return false;
  }

  /**
   * Reads the fence, then the database's offset, and when the offset is
   * below the first number above the fence, reserves the gap in one
   * reservation. The fence is read first: it only rises by a push of a
   * segment the database had already committed, so an offset read after it
   * and below it is a database that went back, never a refill seen half
   * done. Call it holding the entity's refill lock. `seen` is the offset the
   * caller saw the database at, for the report. Returns true when the
   * database was behind (`refused` reaching above the fence says so too).
   */
  async carryIfBehind(entityKey: string, seen?: bigint, refused?: Segment): Promise<boolean> {
    const { allocator, store } = this.options;
    const fence = await store.fence(entityKey);
    if (fence === undefined) return false;
    const offset = await allocator.peek(entityKey);
    const above = this.numberAbove(entityKey, fence);
    if (offset >= above && !(refused !== undefined && refused.end > above)) return false;
    const gap = above - offset;
    if (gap > BigInt(Number.MAX_SAFE_INTEGER))
      throw new Error(
        `${entityKey}: the database is ${gap} numbers behind the fence; carry it forward by hand (docs/ha.md)`,
      );
    const carriedTo = gap > 0n ? (await allocator.reserve(entityKey, Number(gap))).end : offset;
    if (!this.behind.has(entityKey)) {
      this.behind.add(entityKey);
      this.options.events.databaseBehind({
        entityKey,
        databaseOffset: seen ?? offset,
        record: 'fence',
        recordedOffset: above,
        fence,
        carriedTo,
      });
    }
    return true;
  }
}
