import type { RedisClient } from './redis-connection';
import type { Clock } from '../clock';
import { RateLimitedError } from '../errors';
import { DEFAULT_PREFIX, entityKeys } from './keys';

/**
 * `maxSizePerSecond` for entities whose ids do not come from a pool
 * (snowflake): ids counted per wall-clock second, as the pool's pop does for
 * segment entities. A request that would pass the limit takes nothing.
 */
export interface EntityRateLimit {
  /** Counts `count` ids against this second's budget, or throws 429 with Retry-After. */
  admit(entityKey: string, count: number, maxPerSecond: number): Promise<void>;
}

function limited(entityKey: string, maxPerSecond: number, now: number): RateLimitedError {
  return new RateLimitedError(`entity ${entityKey} is limited to ${maxPerSecond} ids per second`, Math.max(1, Math.ceil((1000 - (now % 1000)) / 1000)));
}

/** One process's count (no Redis): the limit holds per instance. */
export class MemoryEntityRateLimit implements EntityRateLimit {
  private readonly used = new Map<string, { second: number; ids: number }>();

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  async admit(entityKey: string, count: number, maxPerSecond: number): Promise<void> {
    if (maxPerSecond <= 0) return;
    const now = this.clock.now();
    const second = Math.floor(now / 1000);
    let window = this.used.get(entityKey);
    if (!window || window.second !== second) this.used.set(entityKey, (window = { second, ids: 0 }));
    if (window.ids + count > maxPerSecond) throw limited(entityKey, maxPerSecond, now);
    window.ids += count;
  }
}

/** Shared by every instance on one Redis: the same `idpool:{KEY}:rate:{second}` counter segment pops use. */
export class RedisEntityRateLimit implements EntityRateLimit {
  constructor(
    private readonly redis: Pick<RedisClient, 'incrby' | 'decrby' | 'pexpire'>,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly prefix = DEFAULT_PREFIX,
  ) {}

  async admit(entityKey: string, count: number, maxPerSecond: number): Promise<void> {
    if (maxPerSecond <= 0) return;
    const now = this.clock.now();
    const key = `${entityKeys(entityKey, this.prefix).ratePrefix}${Math.floor(now / 1000)}`;
    const used = await this.redis.incrby(key, count);
    // Two seconds: the counter outlives its second whatever the clock skew between instances.
    if (used === count) await this.redis.pexpire(key, 2000);
    if (used > maxPerSecond) {
      await this.redis.decrby(key, count);
      throw limited(entityKey, maxPerSecond, now);
    }
  }
}
