import { TurnGroups, type Waiter, share } from '../coalesce';
import type { EntityConfig } from '../entities/entity';
import { RateLimitedError } from '../errors';
import type { EntityRateLimit } from '../pool/rate-limit';

/** What a snowflake take needs of its entity: its key and per-second limit (0 = none). */
export type SnowflakeEntity = Pick<EntityConfig, 'key' | 'maxSizePerSecond'>;

export interface SnowflakeTakesOptions {
  /** Makes `count` ids of one entity's sequence, in order (the generator's `takeStrings`). */
  make(entityKey: string, count: number): Promise<string[]>;
  rate: EntityRateLimit;
}

/**
 * Most ids one group makes: at the default layout's 2,048 ids a
 * millisecond, 16,000 is ~8 ms of one entity's sequence, so a group never
 * holds its requests much longer than they would have waited in line.
 */
const MAX_GROUP_IDS = 16_000;

/**
 * Snowflake takes, coalesced as the segment dispatcher's are: the takes of
 * one entity that arrive in one event-loop turn are admitted against its
 * per-second limit as one sum (one Redis call where the limit is shared)
 * and made in one generator run, the ids handed out in arrival order.
 * When the sum does not fit the limit, each request is admitted on its own,
 * in arrival order, so the limit stays exact per request.
 */
export class SnowflakeTakes {
  private readonly turns: TurnGroups<Waiter<SnowflakeEntity, string[]>>;

  constructor(private readonly o: SnowflakeTakesOptions) {
    this.turns = new TurnGroups(MAX_GROUP_IDS, (waiters, total) => void this.takeGroup(waiters, total));
  }

  take(entity: SnowflakeEntity, count: number): Promise<string[]> {
    return new Promise((resolve, reject) => this.turns.add(entity.key, { entity, count, resolve, reject }));
  }

  private async takeGroup(waiters: Waiter<SnowflakeEntity, string[]>[], total: number): Promise<void> {
    const entity = waiters[0].entity;
    try {
      await this.o.rate.admit(entity.key, total, entity.maxSizePerSecond);
    } catch (err) {
      if (err instanceof RateLimitedError && waiters.length > 1) {
        // Started in arrival order on one connection, so admitted in that order.
        for (const w of waiters) this.takeAlone(w.entity, w.count).then(w.resolve, w.reject);
      } else {
        for (const w of waiters) w.reject(err);
      }
      return;
    }
    try {
      share(waiters, await this.o.make(entity.key, total));
    } catch (err) {
      for (const w of waiters) w.reject(err);
    }
  }

  private async takeAlone(entity: SnowflakeEntity, count: number): Promise<string[]> {
    await this.o.rate.admit(entity.key, count, entity.maxSizePerSecond);
    return this.o.make(entity.key, count);
  }
}
