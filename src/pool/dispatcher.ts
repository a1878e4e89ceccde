import type { EntityConfig } from '../entities/entity';
import type { Clock } from '../clock';
import { PoolExhaustedError, RateLimitedError, UnavailableError } from '../errors';
import type { Logger } from '../logger';
import type { PoolStore } from './pool-store';
import type { Refiller } from './refiller';

export interface DispatcherOptions {
  store: PoolStore;
  refiller: Pick<Refiller, 'markLow' | 'markReset' | 'refill' | 'lastFailure' | 'lowWatermark'>;
  clock: Clock;
  log: Logger;
  /**
   * How long a request waits on an empty pool for a refill before 503. One
   * refill is a SQL round trip plus a push (a few ms here); 250 ms also
   * covers a refill another instance is running under the lock.
   */
  shortageWaitMs?: number;
  /** Metrics and alarms (src/ops); without it exhaustion is only logged. */
  events?: DispatchEvents;
}

/** What the dispatcher reports per request. */
export interface DispatchEvents {
  served(entityKey: string, count: number): void;
  rateLimited(entityKey: string): void;
  exhausted(entityKey: string, count: number): void;
}

export interface DispatchStats {
  idsServed: number;
  rateLimited: number;
  exhausted: number;
}

/** Hands out segment ids: all-or-nothing pops, with a short wait for a refill on shortage. */
export class Dispatcher {
  readonly stats: DispatchStats = { idsServed: 0, rateLimited: 0, exhausted: 0 };

  constructor(private readonly o: DispatcherOptions) {}

  async take(app: EntityConfig, count: number): Promise<string[]> {
    const { store, refiller, clock } = this.o;
    const deadline = clock.monotonic() + (this.o.shortageWaitMs ?? 250);
    for (;;) {
      const result = await store.take(app.key, count, app.maxSizePerSecond);
      switch (result.kind) {
        case 'ok':
          if (result.remaining < refiller.lowWatermark(app)) refiller.markLow(app.key);
          this.stats.idsServed += result.ids.length;
          this.o.events?.served(app.key, result.ids.length);
          return result.ids;
        case 'rate_limited':
          this.stats.rateLimited++;
          this.o.events?.rateLimited(app.key);
          throw new RateLimitedError(`entity ${app.key} is limited to ${app.maxSizePerSecond} ids per second`, Math.max(1, Math.ceil(result.retryAfterMs / 1000)));
        case 'server_changed':
          refiller.markReset(app.key);
          break;
        case 'short':
          break;
      }
      const left = deadline - clock.monotonic();
      if (left <= 0) {
        if (result.kind === 'server_changed') throw new UnavailableError(`pool of ${app.key} is being rebuilt after a Redis server change`, 1);
        // The refill failed (database or Redis down): that is the answer's
        // cause, and the error handler turns it into 503 unavailable.
        const failure = refiller.lastFailure(app.key);
        if (failure !== undefined) throw failure;
        this.stats.exhausted++;
        if (this.o.events) this.o.events.exhausted(app.key, count);
        else this.o.log.error({ alarm: 'pool_exhausted', entityKey: app.key, count }, 'pool exhausted: a request found too few ids after waiting for a refill');
        throw new PoolExhaustedError(`pool of ${app.key} has fewer than ${count} ids ready; retry shortly`, 1);
      }
      // Wait for our refill, but re-check the pool at least every 20 ms: the
      // refill may be running on another instance that holds the lock.
      await Promise.race([refiller.refill(app.key, count), clock.sleep(Math.min(20, left))]);
    }
  }
}
