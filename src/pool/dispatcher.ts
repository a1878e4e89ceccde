import type { EntityConfig } from '../entities/entity';
import type { Clock } from '../clock';
import { PoolExhaustedError, UnavailableError } from '../errors';
import type { PeriodPools } from './period-pools';
import type { PoolStore } from './pool-store';
import { entityRateLimited } from './rate-limit';
import type { Refiller } from './refiller';
import type { TakenIds } from './taken-ids';

export interface DispatcherOptions {
  store: PoolStore;
  refiller: Pick<Refiller, 'markLow' | 'markReset' | 'refill' | 'lastFailure' | 'lowWatermark' | 'touch'>;
  clock: Clock;
  /** The numbers layer, asked why a business-number take ran short (a period that began, or one spent). */
  periods?: Pick<PeriodPools, 'afterShort'>;
  /** How long a take waits on an empty pool before 503 (default 250 ms: a refill, here or elsewhere, takes a few ms). */
  shortageWaitMs?: number;
  /** Metrics and alarms (`ops/observers.ts`; there too a logging-only implementation). */
  events: DispatchEvents;
  /** Whether one entity's takes of one turn share a store call; default on Redis only (in process, no I/O to share). */
  coalesce?: boolean;
}

/** What the dispatcher reports per request. */
export interface DispatchEvents {
  rateLimited(entityKey: string): void;
  exhausted(entityKey: string, count: number): void;
  /** A business-number period has handed out every sequence its width holds (`INV…: 6 digits`); nothing more until `nextAt` (Unix ms). */
  periodExhausted(entityKey: string, digits: number, nextAt: number): void;
  /** A take answered 503 for too few ids ready: the pool ran short, or its refill failed. */
  refused(entityKey: string): void;
}

/**
 * The segment and business-number take (a `Taker`): all or nothing from the pool, waiting briefly for a refill when
 * short. `takeShared` counts a turn's sum against the limit: it succeeds only where each take in turn would have.
 */
export class Dispatcher {
  readonly stats = { rateLimited: 0, exhausted: 0 };
  readonly coalesce: boolean;

  constructor(private readonly options: DispatcherOptions) {
    this.coalesce = options.coalesce ?? options.store.kind === 'redis';
  }

  /** One store call for `total` ids: the ids, or undefined when the takes must be answered one by one. */
  async takeShared(entity: EntityConfig, total: number): Promise<TakenIds | undefined> {
    const result = await this.options.store.take(entity.key, total, entity.maxSizePerSecond);
    if (result.kind !== 'ok') return undefined;
    this.served(entity, result.remaining);
    return result.ids;
  }

  /** After a take: the pool below its watermark is refilled soon, and the entity counts as active for the sweep. */
  private served(entity: EntityConfig, remaining: number): void {
    const { refiller } = this.options;
    if (remaining < refiller.lowWatermark(entity)) refiller.markLow(entity.key);
    refiller.touch(entity.key);
  }

  async take(entity: EntityConfig, count: number): Promise<TakenIds> {
    const { store, refiller, clock, events } = this.options;
    const deadline = clock.monotonic() + (this.options.shortageWaitMs ?? 250);
    for (;;) {
      const result = await store.take(entity.key, count, entity.maxSizePerSecond);
      switch (result.kind) {
        case 'ok':
          this.served(entity, result.remaining);
          return result.ids;
        case 'rate_limited':
          this.stats.rateLimited++;
          events.rateLimited(entity.key);
          throw entityRateLimited(entity.key, entity.maxSizePerSecond, result.retryAfterMs);
        case 'epoch_changed':
          refiller.markReset(entity.key);
          break;
        case 'short':
          // A business-number period may have just begun (its numbers staged), or be spent: the numbers layer says.
          if (entity.numbers && (await this.options.periods?.afterShort(entity, count))) continue;
          break;
      }
      const left = deadline - clock.monotonic();
      if (left <= 0) {
        if (result.kind === 'epoch_changed')
          throw new UnavailableError(`pool of ${entity.key} is being rebuilt after a Redis server change`, 1);
        // A failed refill (database or Redis down) is the cause; the error handler answers 503.
        events.refused(entity.key);
        const failure = refiller.lastFailure(entity.key);
        if (failure !== undefined) throw failure;
        this.stats.exhausted++;
        events.exhausted(entity.key, count);
        throw new PoolExhaustedError(`pool of ${entity.key} has fewer than ${count} ids ready; retry shortly`, 1);
      }
      // Re-check at least every 20 ms: the refill may run on another instance holding the lock.
      await Promise.race([refiller.refill(entity.key, count), clock.sleep(Math.min(20, left))]);
    }
  }
}
