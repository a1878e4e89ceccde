import type { EntityConfig } from '../entities/entity';
import { RateLimitedError } from '../errors';
import type { EntityRateLimit } from '../pool/rate-limit';
import { type TakenIds, listedIds } from '../pool/taken-ids';
import type { Taker } from './take-service';

export interface SnowflakeTakerDeps {
  /** Makes `count` ids of one entity's sequence, in order (the generator's `takeStrings`). */
  make(entityKey: string, count: number): Promise<string[]>;
  /** Snowflake entities' `maxSizePerSecond`, counted across instances where Redis is shared. */
  rate: EntityRateLimit;
}

/** The snowflake take: the per-second admit, then the generator; a turn's sum over the limit declines (exact per take). */
export class SnowflakeTaker implements Taker {
  readonly coalesce = true;

  constructor(private readonly deps: SnowflakeTakerDeps) {}

  async take(entity: EntityConfig, count: number): Promise<TakenIds> {
    await this.deps.rate.admit(entity.key, count, entity.maxSizePerSecond);
    return listedIds(await this.deps.make(entity.key, count));
  }

  takeShared(entity: EntityConfig, total: number): Promise<TakenIds | undefined> {
    return this.take(entity, total).catch((err: unknown) => {
      if (err instanceof RateLimitedError) return undefined;
      throw err;
    });
  }
}
