import { TurnGroups, type Waiter, share } from '../coalesce';
import type { EntityConfig } from '../entities/entity';
import { NotFoundError, refuseHeld } from '../errors';
import type { TakenIds } from '../pool/taken-ids';

/**
 * The kinds of take. Each entity is served by one kind, named by
 * {@link takeKind}; a new kind adds its name here, a line there and a
 * {@link Taker} handed to the service, and no face changes.
 */
export type TakeKind = 'segment' | 'snowflake' | 'number' | 'gapless';

/** The kind of take that serves `entity`: the one place that asks an entity's mode (and whether it has a business-number `format`, gapless or not). */
export function takeKind(entity: Pick<EntityConfig, 'mode' | 'numbers' | 'gapless'>): TakeKind {
  if (entity.numbers) return entity.gapless ? 'gapless' : 'number';
  return entity.mode === 'snowflake' ? 'snowflake' : 'segment';
}

/**
 * One kind of take: how its ids are made for one entity. The service
 * around it coalesces, counts and reports, so a taker only makes ids.
 */
export interface Taker {
  /** Whether the takes of one entity in one event-loop turn should share one {@link takeShared} call. */
  readonly coalesce: boolean;
  /** `count` ids of the entity, answered on its own: waits, retries and refusals are the taker's. */
  take(entity: EntityConfig, count: number, request?: TakeRequest): Promise<TakenIds>;
  /**
   * One attempt at `total` ids for a group of takes, all or nothing: the
   * ids, or undefined when the group must be answered take by take (too few
   * ready, over the per-second limit), each then as {@link take} answers it.
   * A throw fails every take of the group.
   */
  takeShared(entity: EntityConfig, total: number): Promise<TakenIds | undefined>;
}

/**
 * What a take carries besides its count, for the kinds that keep a record
 * of each take (a gapless series' ledger); the other kinds ignore it.
 */
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
 * Most ids one shared call takes: 64 requests of the largest batch (1,000)
 * is one LPOP of 64,000 ids, a ~1 MB reply that holds the Redis thread for
 * milliseconds; at the default snowflake layout's 2,048 ids a millisecond,
 * 16,000 is ~8 ms of one entity's sequence, so a group never holds its
 * requests much longer than they would have waited in line. Beyond this a
 * new group starts.
 */
const MAX_SHARED_IDS = 16_000;

/**
 * The one take under every face (the native route, Leaf's and Tinyid's
 * routes): the face authenticates and hands in the entity; the service
 * picks the kind of take, coalesces the takes of one entity that arrive in
 * one event-loop turn into one shared call for the sum of their counts
 * (the ids handed out in arrival order; when the shared call declines,
 * each take is answered on its own, in arrival order, so it succeeds only
 * where each, taken one after another, would have), and counts what it
 * served.
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
    if (waiters.length === 1) {
      const [w] = waiters;
      return taker.take(entity, w.count).then(w.resolve, w.reject);
    }
    let ids: TakenIds | undefined;
    try {
      ids = await taker.takeShared(entity, total);
    } catch (err) {
      for (const w of waiters) w.reject(err);
      return;
    }
    if (ids) share(waiters, ids);
    // Answer each on its own, in arrival order (one connection keeps the order of the calls).
    else for (const w of waiters) taker.take(w.entity, w.count).then(w.resolve, w.reject);
  }
}
