import { TurnGroups, type Waiter, share } from '../coalesce';
import type { EntityConfig } from '../entities/entity';
import { NotFoundError, refuseHeld } from '../errors';
import type { TakenIds } from '../pool/taken-ids';

/** The kinds of take; a new kind adds its name here, a line in {@link takeKind} and a {@link Taker}, and no face changes. */
export type TakeKind = 'segment' | 'snowflake' | 'number' | 'gapless';

/** The kind of take that serves `entity`: the one place that asks an entity's mode (and whether it has a business-number `format`, gapless or not). */
export function takeKind(entity: Pick<EntityConfig, 'mode' | 'numbers' | 'gapless'>): TakeKind {
  if (entity.numbers) return entity.gapless ? 'gapless' : 'number';
  return entity.mode === 'snowflake' ? 'snowflake' : 'segment';
}

/** One kind of take: how its ids are made (the service coalesces, counts and reports). */
export interface Taker {
  /** Whether the takes of one entity in one event-loop turn should share one {@link takeShared} call. */
  readonly coalesce: boolean;
  /** `count` ids of the entity, answered on its own: waits, retries and refusals are the taker's. */
  take(entity: EntityConfig, count: number, request?: TakeRequest): Promise<TakenIds>;
  /** One all-or-nothing try at `total` ids for a group; undefined: each answered by {@link take}; a throw fails all. */
  takeShared(entity: EntityConfig, total: number): Promise<TakenIds | undefined>;
}

/** What a take carries besides its count, for a kind that records each take (a gapless series' ledger). */
export interface TakeRequest {
  /** The request's `Idempotency-Key`: a gapless take with the same key answers the same numbers, forever. */
  readonly idempotencyKey?: string;
  /** The caller's reference (an invoice's id), kept in the ledger beside each number. */
  readonly reference?: string;
}

/** What the take service reports: every id it hands out, once, whatever its kind. */
export interface TakeEvents {
  served(entityKey: string, count: number): void;
}

export interface TakeServiceDeps {
  /** The taker of each kind served here; a kind without one answers 404. */
  takers: Partial<Record<TakeKind, Taker>>;
  events: TakeEvents;
}

/**
 * Most ids one shared call takes (beyond, a new group starts): 64,000 ids were a ~1 MB LPOP holding Redis for ms;
 * 16,000 is ~8 ms of a default snowflake sequence (2,048 a ms), no longer than the requests would queue.
 */
const MAX_SHARED_IDS = 16_000;

/**
 * The one take under every face (native, Leaf, Tinyid): picks the kind, coalesces one entity's takes of one event-loop
 * turn into one shared call (ids in arrival order; when it declines, each take answered on its own, in order), and
 * counts what it served.
 */
export class TakeService {
  readonly stats = { idsServed: 0 };
  private readonly turns: TurnGroups<Waiter<EntityConfig, TakenIds>>;

  constructor(private readonly deps: TakeServiceDeps) {
    this.turns = new TurnGroups(MAX_SHARED_IDS, (waiters, total) => void this.takeGroup(waiters, total));
  }

  /** `count` ids of the entity (1..its `maxSizePerTimes`, checked by the face in its own words). */
  async take(entity: EntityConfig, count: number, request?: TakeRequest): Promise<TakenIds> {
    refuseHeld(entity);
    const taker = this.takerOf(entity);
    const ids = taker.coalesce
      ? await new Promise<TakenIds>((resolve, reject) => this.turns.add(entity.key, { entity, count, resolve, reject }))
      : await taker.take(entity, count, request);
    this.stats.idsServed += ids.length;
    this.deps.events.served(entity.key, ids.length);
    return ids;
  }

  private takerOf(entity: EntityConfig): Taker {
    const kind = takeKind(entity);
    const taker = this.deps.takers[kind];
    if (!taker) throw new NotFoundError(`${kind} ids are not enabled on this instance`);
    return taker;
  }

  private async takeGroup(waiters: Waiter<EntityConfig, TakenIds>[], total: number): Promise<void> {
    const entity = waiters[0].entity;
    const taker = this.takerOf(entity);
    let ids: TakenIds | undefined;
    try {
      // A take alone is answered by `take` at once (its waits and refusals), without a shared try.
      if (waiters.length > 1) ids = await taker.takeShared(entity, total);
    } catch (err) {
      for (const w of waiters) w.reject(err);
      return;
    }
    if (ids) share(waiters, ids);
    // Answer each on its own, in arrival order (one connection keeps the order of the calls).
    else for (const w of waiters) taker.take(w.entity, w.count).then(w.resolve, w.reject);
  }
}
