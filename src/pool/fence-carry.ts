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
  events: Pick<RefillEvents, 'databaseBehind'>;
}

/**
 * Carries an entity whose database went back (a restore, a lagging replica promoted) past its Redis fence, the highest
 * id ever pushed: one reservation of the gap, `database_behind` once per episode. Its callers (the refiller on a
 * refused push, the fence check) hold the entity's refill lock: the gap is carried once.
 */
export class FenceCarrier {
  /** Entities found behind, until a push is accepted or a check finds them past the fence (one alarm per episode). */
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
   * Under the entity's refill lock: reads the fence, then the offset, and reserves the gap when the offset is below the
   * fence. The fence first: it rises only by pushing a segment the database committed, so an offset read after it and
   * below it went back, never a refill seen half done. True when the database was behind (a `refused` segment reaching
   * above the fence was reserved by one; its start, the offset the database had, is the one reported).
   */
  async carryIfBehind(entityKey: string, refused?: Segment): Promise<boolean> {
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
        databaseOffset: refused?.start ?? offset,
        record: 'fence',
        recordedOffset: above,
        fence,
        carriedTo,
      });
    }
    return true;
  }
}
