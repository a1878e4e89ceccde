/**
 * A gapless series' second record of how far each period was issued, kept
 * outside the database: a ledger restored from a backup is behind it, and
 * the series stops (`gapless_ledger_behind`) until an operator enters the
 * numbers it lost (`idpool numbers reconcile`). Raised after each take's
 * commit, before its numbers are answered, so the record is never above
 * what a ledger that did not go back holds.
 */
import type { RedisClient } from '../redis/connection';
import { gaplessHighWaterKey } from '../redis/keys';
import type { HighWaterRecord } from '../segment/high-water';

export interface GaplessHighWater {
  /** Where the record is kept, for the 503's message and the log. */
  readonly kind: 'redis' | 'high-water file' | 'none';
  /** The highest sequence recorded for the period; undefined when none is. */
  get(entityKey: string, period: string): Promise<bigint | undefined>;
  /** Records that the period's sequences up to `seq` were issued (never lowers the record). */
  raise(entityKey: string, period: string, seq: bigint): Promise<void>;
}

/** With Redis: one sorted set per entity (a period a member), raised with `ZADD GT`. */
export class RedisGaplessHighWater implements GaplessHighWater {
  readonly kind = 'redis';

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async get(entityKey: string, period: string): Promise<bigint | undefined> {
    const score = await this.redis.zscore(gaplessHighWaterKey(entityKey, this.prefix), period);
    return score === null ? undefined : BigInt(Math.round(Number(score)));
  }

  async raise(entityKey: string, period: string, seq: bigint): Promise<void> {
    await this.redis.zadd(gaplessHighWaterKey(entityKey, this.prefix), 'GT', seq.toString(), period);
  }
}

/**
 * The embedded service's: a mark in the high-water file beside the SQLite
 * file (segment/high-water.ts), fsynced before the numbers are answered.
 * Two words, `KEY gapless-PERIOD`: never an entity key, never a business
 * number period's mark (three words, pruned with its period).
 */
export class FileGaplessHighWater implements GaplessHighWater {
  readonly kind = 'high-water file';

  constructor(private readonly record: HighWaterRecord) {}

  get(entityKey: string, period: string): Promise<bigint | undefined> {
    return Promise.resolve(this.record.get(`${entityKey} gapless-${period}`));
  }

  raise(entityKey: string, period: string, seq: bigint): Promise<void> {
    return this.record.raise(`${entityKey} gapless-${period}`, seq);
  }
}

/** No second record (a service on MariaDB or PostgreSQL without Redis): a restore is not seen (docs/numbers.md says so). */
export const NO_HIGH_WATER: GaplessHighWater = {
  kind: 'none',
  get: () => Promise.resolve(undefined),
  raise: () => Promise.resolve(),
};
