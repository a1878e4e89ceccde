import type { RedisClient } from '../redis/connection';
import { callFunction, scriptOutcome } from '../redis/functions';
import type { Clock } from '../clock';
import { RateLimitedError } from '../errors';
import { DEFAULT_PREFIX, entityKeys } from '../redis/keys';

/**
 * `maxSizePerSecond` for entities whose ids do not come from a pool
 * (snowflake): ids counted per wall-clock second, as the pool's take does for
 * segment entities. A request that would pass the limit takes nothing.
 */
export interface EntityRateLimit {
  /** Counts `count` ids against this second's budget, or throws 429 with Retry-After. */
  admit(entityKey: string, count: number, maxPerSecond: number): Promise<void>;
}

/** The 429 of an entity over its per-second limit: its one wording, for takes, leases and snowflake ids alike. */
export function entityRateLimited(entityKey: string, maxPerSecond: number, retryAfterMs: number): RateLimitedError {
  return new RateLimitedError(
    `entity ${entityKey} is limited to ${maxPerSecond} ids per second`,
    Math.max(1, Math.ceil(retryAfterMs / 1000)),
  );
}

/** Where `count` ids stand against this second's limit: they fit (and `count()` counts them), or they do not. */
type RateWindow =
  { readonly kind: 'open'; count(): void } | { readonly kind: 'rate_limited'; readonly retryAfterMs: number };

const UNLIMITED: RateWindow = { kind: 'open', count: () => undefined };

/**
 * The per-second limit of `_prelude.lua` (`rateWindow`, `countRate`) in
 * this process, for the in-process pool and snowflake limit: ids counted per
 * second of `clock` (Redis counts per second of the Redis clock, the only
 * difference); `count` more fit while the second's count plus `count` stays
 * within `limit`, and a refusal says the ms left in the second. A limit of
 * 0 or less is none, and counts nothing. `test/unit/per-second-limit.test.ts`
 * states the rules as a table; `test/integration/per-second-limit.test.ts`
 * runs one sequence against both and compares the answers.
 */
export class PerSecondLimiter {
  private readonly windows = new Map<string, { second: number; used: number }>();

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  /** `rateWindow`: whether `count` more ids of `key` fit under `limit` this second; counted only by the window's `count()`. */
  window(key: string, count: number, limit: number): RateWindow {
    if (limit <= 0) return UNLIMITED;
    const now = this.clock.now();
    const second = Math.floor(now / 1000);
    let window = this.windows.get(key);
    // A key per second in Redis: a second not seen before starts at 0.
    if (window?.second !== second) this.windows.set(key, (window = { second, used: 0 }));
    if (window.used + count > limit)
      return { kind: 'rate_limited', retryAfterMs: 1000 - Math.floor(now - second * 1000) };
    const open = window;
    return { kind: 'open', count: () => void (open.used += count) };
  }

  /** `idpool_rate_limit`: checks and counts in one step. */
  admit(key: string, count: number, limit: number): RateWindow {
    const window = this.window(key, count, limit);
    if (window.kind === 'open') window.count();
    return window;
  }
}

/** One process's count (no Redis): the limit holds per instance. */
export class MemoryEntityRateLimit implements EntityRateLimit {
  private readonly limiter: PerSecondLimiter;

  constructor(clock: Pick<Clock, 'now'>) {
    this.limiter = new PerSecondLimiter(clock);
  }

  async admit(entityKey: string, count: number, maxPerSecond: number): Promise<void> {
    const window = this.limiter.admit(entityKey, count, maxPerSecond);
    if (window.kind === 'rate_limited') throw entityRateLimited(entityKey, maxPerSecond, window.retryAfterMs);
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
    if (outcome.kind === 'rate_limited') throw entityRateLimited(entityKey, maxPerSecond, outcome.retryAfterMs);
  }
}
