import type { EntityConfig } from '../entities/entity';
import type { Clock } from '../clock';
import { TurnGroups, type Waiter as CoalescedWaiter, share } from '../coalesce';
import { PoolExhaustedError, UnavailableError } from '../errors';
import type { PoolStore, TakeResult } from './pool-store';
import { entityRateLimited } from './rate-limit';
import type { Refiller } from './refiller';
import type { TakenIds } from './taken-ids';

export interface DispatcherOptions {
  store: PoolStore;
  refiller: Pick<Refiller, 'markLow' | 'markReset' | 'refill' | 'lastFailure' | 'lowWatermark' | 'touch'>;
  clock: Clock;
  /**
   * How long a request waits on an empty pool for a refill before 503. One
   * refill is a SQL round trip plus a push (a few ms here); 250 ms also
   * covers a refill another instance is running under the lock.
   */
  shortageWaitMs?: number;
  /** Metrics and alarms (`ops/observers.ts`; there too a logging-only implementation). */
  events: DispatchEvents;
  /**
   * Whether takes for one entity arriving in the same event-loop turn share
   * one store call. Default: for the Redis store, where each call is a
   * round trip and a write; the in-process store answers without I/O, so
   * there is nothing to share and the wait for the turn's end would only
   * add latency.
   */
  coalesce?: boolean;
}

/**
 * Most ids one shared store call takes: 64 requests of the largest batch
 * (1,000) is one LPOP of 64,000 ids, a ~1 MB reply that holds the Redis
 * thread for milliseconds; beyond this a new group starts.
 */
const MAX_COALESCED_IDS = 16_000;

type Waiter = CoalescedWaiter<EntityConfig, TakenIds>;

/** What the dispatcher reports per request. */
export interface DispatchEvents {
  served(entityKey: string, count: number): void;
  rateLimited(entityKey: string): void;
  exhausted(entityKey: string, count: number): void;
  /** A business-number period has handed out every sequence its width holds (`INV…: 6 digits`); nothing more until `nextAt` (Unix ms). */
  periodExhausted(entityKey: string, digits: number, nextAt: number): void;
  /** A take answered 503 for too few ids ready: the pool ran short, or its refill failed. */
  refused(entityKey: string): void;
}

export interface DispatchStats {
  idsServed: number;
  rateLimited: number;
  exhausted: number;
}

/**
 * Hands out segment ids: all-or-nothing takes, with a short wait for a refill
 * on shortage. Concurrent takes for one entity that arrive in the same
 * event-loop turn share one store call for the sum of their counts; the ids
 * are handed out in arrival order. The shared call is all or nothing for
 * the sum and counts the sum against the per-second limit, so it succeeds
 * only where every request, taken one after another, would have; otherwise
 * (short, rate limited, epoch changed) each request is answered on its own.
 */
export class Dispatcher {
  readonly stats: DispatchStats = { idsServed: 0, rateLimited: 0, exhausted: 0 };
  private readonly turns: TurnGroups<Waiter> | undefined;

  constructor(private readonly o: DispatcherOptions) {
    const coalesce = o.coalesce ?? o.store.kind === 'redis';
    this.turns = coalesce
      ? new TurnGroups(MAX_COALESCED_IDS, (waiters, total) => void this.takeGroup(waiters, total))
      : undefined;
  }

  take(entity: EntityConfig, count: number): Promise<TakenIds> {
    const turns = this.turns;
    if (!turns) return this.takeAlone(entity, count);
    return new Promise<TakenIds>((resolve, reject) => turns.add(entity.key, { entity, count, resolve, reject }));
  }

  private async takeGroup(waiters: Waiter[], total: number): Promise<void> {
    if (waiters.length === 1) {
      const [w] = waiters;
      return this.takeAlone(w.entity, w.count).then(w.resolve, w.reject);
    }
    const entity = waiters[0].entity;
    let result: TakeResult;
    try {
      result = await this.o.store.take(entity.key, total, entity.maxSizePerSecond);
    } catch (err) {
      for (const w of waiters) w.reject(err);
      return;
    }
    if (result.kind !== 'ok') {
      // Answer each on its own, in arrival order (one connection keeps the order of the calls).
      for (const w of waiters) this.takeAlone(w.entity, w.count).then(w.resolve, w.reject);
      return;
    }
    if (result.remaining < this.o.refiller.lowWatermark(entity)) this.o.refiller.markLow(entity.key);
    share(waiters, result.ids, (w) => this.served(entity.key, w.count));
  }

  private served(entityKey: string, count: number): void {
    this.o.refiller.touch(entityKey);
    this.stats.idsServed += count;
    this.o.events.served(entityKey, count);
  }

  private async takeAlone(entity: EntityConfig, count: number): Promise<TakenIds> {
    const { store, refiller, clock } = this.o;
    const deadline = clock.monotonic() + (this.o.shortageWaitMs ?? 250);
    for (;;) {
      const result = await store.take(entity.key, count, entity.maxSizePerSecond);
      switch (result.kind) {
        case 'ok':
          if (result.remaining < refiller.lowWatermark(entity)) refiller.markLow(entity.key);
          this.served(entity.key, result.ids.length);
          return result.ids;
        case 'rate_limited':
          this.stats.rateLimited++;
          this.o.events.rateLimited(entity.key);
          throw entityRateLimited(entity.key, entity.maxSizePerSecond, result.retryAfterMs);
        case 'epoch_changed':
          refiller.markReset(entity.key);
          break;
        case 'short':
          break;
      }
      const left = deadline - clock.monotonic();
      if (left <= 0) {
        if (result.kind === 'epoch_changed')
          throw new UnavailableError(`pool of ${entity.key} is being rebuilt after a Redis server change`, 1);
        // The refill failed (database or Redis down): that is the answer's
        // cause, and the error handler turns it into 503 unavailable.
        this.o.events.refused(entity.key);
        const failure = refiller.lastFailure(entity.key);
        if (failure !== undefined) throw failure;
        this.stats.exhausted++;
        this.o.events.exhausted(entity.key, count);
        throw new PoolExhaustedError(`pool of ${entity.key} has fewer than ${count} ids ready; retry shortly`, 1);
      }
      // Wait for our refill, but re-check the pool at least every 20 ms: the
      // refill may be running on another instance that holds the lock.
      await Promise.race([refiller.refill(entity.key, count), clock.sleep(Math.min(20, left))]);
    }
  }
}
