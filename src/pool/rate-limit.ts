import { FixedWindow } from '../fixed-window';
import type { RedisClient } from '../redis/connection';
import { callFunction, scriptOutcome } from '../redis/functions';
import type { Clock } from '../clock';
import { RateLimitedError } from '../errors';
import { DEFAULT_PREFIX, entityKeys } from '../redis/keys';
import type { LeaseRateLimit } from '../segment/lease';

/** `maxSizePerSecond` for entities without a pool (snowflake): ids per second, as the pool's take counts; over it, nothing is taken. */
export type EntityRateLimit = LeaseRateLimit;

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
 * `_prelude.lua`'s per-second limit (`rateWindow`, `countRate`) in process, on `clock`'s seconds rather than Redis's; a
 * limit ≤ 0 is none. The rules: `test/unit/per-second-limit.test.ts`; against the Lua: the integration test.
 */
export class PerSecondLimiter {
  private readonly windows = new Map<string, FixedWindow>();

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  /** `rateWindow`: whether `count` more ids of `key` fit under `limit` this second; counted only by the window's `count()`. */
  window(key: string, count: number, limit: number): RateWindow {
    if (limit <= 0) return UNLIMITED;
    const now = this.clock.now();
    let window = this.windows.get(key);
    if (!window) this.windows.set(key, (window = new FixedWindow(1000, true)));
    // A key per second in Redis: a second not seen before starts at 0.
    const open = window.at(now);
    if (open.count + count > limit) return { kind: 'rate_limited', retryAfterMs: Math.ceil(open.leftAt(now)) };
    return { kind: 'open', count: () => void (open.count += count) };
  }
}

/** One process's count (no Redis): the limit holds per instance. */
export class MemoryEntityRateLimit extends PerSecondLimiter implements EntityRateLimit {
  /** `idpool_rate_limit`: checks and counts in one step. */
  async admit(entityKey: string, count: number, maxPerSecond: number): Promise<void> {
    const window = this.window(entityKey, count, maxPerSecond);
    if (window.kind === 'rate_limited') throw entityRateLimited(entityKey, maxPerSecond, window.retryAfterMs);
    window.count();
  }
}

/** Shared by every instance on one Redis: segment takes' `idpool:{KEY}:rate:{second}` counter, one `rate_limit-1.lua` call. */
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
