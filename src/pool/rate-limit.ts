import type { RedisClient } from './redis-connection';
import { callFunction, scriptOutcome } from './functions';
import type { Clock } from '../clock';
import { RateLimitedError } from '../errors';
import { DEFAULT_PREFIX, entityKeys } from './keys';

/**
 * `maxSizePerSecond` for entities whose ids do not come from a pool
 * (snowflake): ids counted per wall-clock second, as the pool's take does for
 * segment entities. A request that would pass the limit takes nothing.
 */
export interface EntityRateLimit {
  /** Counts `count` ids against this second's budget, or throws 429 with Retry-After. */
  admit(entityKey: string, count: number, maxPerSecond: number): Promise<void>;
}

function limited(entityKey: string, maxPerSecond: number, retryAfterMs: number): RateLimitedError {
  return new RateLimitedError(
    `entity ${entityKey} is limited to ${maxPerSecond} ids per second`,
    Math.max(1, Math.ceil(retryAfterMs / 1000)),
  );
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
    if (window?.second !== second) this.used.set(entityKey, (window = { second, ids: 0 }));
    if (window.ids + count > maxPerSecond) throw limited(entityKey, maxPerSecond, 1000 - (now % 1000));
    window.ids += count;
  }
}

/**
 * Shared by every instance on one Redis: the same `idpool:{KEY}:rate:{second}`
 * counter segment takes use, checked and counted in one call
 * (`rate_limit-1.lua`) on the Redis server's clock.
 */
export class RedisEntityRateLimit implements EntityRateLimit {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = DEFAULT_PREFIX,
  ) {}

  async admit(entityKey: string, count: number, maxPerSecond: number): Promise<void> {
    if (maxPerSecond <= 0) return;
    const [code, retryAfterMs] = await callFunction<[number, number?]>(
      this.redis,
      'idpool_rate_limit',
      [entityKeys(entityKey, this.prefix).ratePrefix],
      [count, maxPerSecond],
    );
    const outcome = scriptOutcome('idpool_rate_limit', code, retryAfterMs ?? 1000, ['rate_limited']);
    if (outcome.kind === 'rate_limited') throw limited(entityKey, maxPerSecond, outcome.retryAfterMs);
  }
}
