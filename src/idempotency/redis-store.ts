import type { Clock } from '../clock';
import { type Logger, silentLogger } from '../logger';
import { idempotencyBytesKey, idempotencyKeys } from '../redis/keys';
import type { RedisClient } from '../redis/connection';
import { callFunction } from '../redis/functions';
import { decodeAnswer, encodeAnswer } from './codec';
import { DEFAULT_IDEMPOTENCY_MAX_MB } from './memory-store';
import {
  ANSWER_TTL_MS,
  CLAIM_TTL_MS,
  IN_PROGRESS_WAIT_MS,
  type IdempotencyStore,
  type IdempotentAnswer,
  type ProduceIds,
  type StoredAnswer,
  checked,
  inProgress,
} from './store';

/** How often a request polls for the answer of another one with the same key. */
const POLL_MS = 25;

/** Answers per entity: 10,000 in 5 minutes is 33 keyed requests a second, ~0.5 MB of monotonic answers. */
const REDIS_ANSWERS_PER_ENTITY = 10_000;

/** Bytes a stored answer is counted as: key, value, and ~100 of Redis's bookkeeping (64-bit Redis 7). */
export function answerBytes(answerKey: string, encoded: string): number {
  return answerKey.length + encoded.length + 100;
}

/** Bounds of the answers in Redis: under `noeviction`, memory answers fill is memory refills cannot use. */
export interface RedisAnswerLimits {
  /** Answers per entity; the oldest are dropped beyond it. */
  answersPerEntity: number;
  /** Bytes of answers per entity ({@link answerBytes}); the oldest are dropped beyond it. */
  bytesPerEntity: number;
  /**
   * Bytes stored by every instance in the last {@link ANSWER_TTL_MS}, less those the caps dropped (expired answers
   * count until their minute passes): beyond it an answer is not stored and a retry takes new ids.
   */
  totalBytes: number;
}

/** `IDPOOL_IDEMPOTENCY_MAX_MB` in total, a quarter of it per entity. */
export function redisAnswerLimits(totalBytes: number): RedisAnswerLimits {
  return { answersPerEntity: REDIS_ANSWERS_PER_ENTITY, bytesPerEntity: Math.floor(totalBytes / 4), totalBytes };
}

const MINUTE_MS = 60_000;
/** Minutes of stored bytes that cover an answer's whole life. */
const TOTAL_MINUTES = Math.ceil(ANSWER_TTL_MS / MINUTE_MS) + 1;

/** Shared by every instance that talks to the same Redis. */
export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly clock: Clock,
    private readonly prefix: string,
    private readonly limits: RedisAnswerLimits = redisAnswerLimits(DEFAULT_IDEMPOTENCY_MAX_MB * 1024 * 1024),
    private readonly log: Logger = silentLogger,
  ) {}
  async once(entityKey: string, requestKey: string, count: number, produce: ProduceIds): Promise<IdempotentAnswer> {
    const keys = idempotencyKeys(entityKey, requestKey, this.prefix);
    const earlier = await this.answer(keys.answer);
    if (earlier) return checked(earlier, count);

    const token = `${process.pid}:${this.clock.monotonic()}:${Math.random()}`;
    const claimed = await this.redis.set(keys.claim, token, 'PX', CLAIM_TTL_MS, 'NX');
    if (claimed !== 'OK') {
      const deadline = this.clock.monotonic() + IN_PROGRESS_WAIT_MS;
      while (this.clock.monotonic() < deadline) {
        await this.clock.sleep(POLL_MS);
        const stored = await this.answer(keys.answer);
        if (stored) return checked(stored, count);
      }
      throw inProgress();
    }

    try {
      const ids = await produce();
      const encoded = encodeAnswer(count, ids);
      const bytes = answerBytes(keys.answer, encoded);
      if (!(await this.room(bytes))) {
        this.log.warn(
          { entityKey, bytes, limits: this.limits },
          'Idempotency-Key answers are at their byte bound; answering without storing (a retry takes new ids)',
        );
        await this.redis.del(keys.claim).catch(() => undefined);
        return { ids, replayed: false };
      }
      // The first answer stored wins; one call (`store_answer-3.lua`) also indexes it by time and drops this
      // entity's expired answers and, beyond the count and byte caps, its oldest.
      const { answersPerEntity, bytesPerEntity } = this.limits;
      const [stored, ...reply] = await callFunction<[number, ...(string | number | null)[]]>(
        this.redis,
        'idpool_store_answer',
        [keys.answer, keys.index, keys.bytes],
        [encoded, ANSWER_TTL_MS, requestKey, answersPerEntity, keys.answerPrefix, bytes, bytesPerEntity],
      );
      if (stored === 1) {
        await this.count(bytes, reply.map(Number));
        return { ids, replayed: false };
      }
      const [winner] = reply as (string | null | undefined)[];
      // Our claim expired and another request answered first: its answer stands.
      if (winner === undefined || winner === null) throw inProgress();
      return checked(decodeAnswer(winner), count);
    } catch (err) {
      // Nothing stands for this key: a retry runs at once rather than waiting out the claim.
      await this.redis.del(keys.claim).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Whether `bytes` fit the per-entity and the total bound. Each minute's count lives as long as its answers (by
   * the Redis clock), so all are summed, a minute either side of this clock's for a little skew.
   */
  private async room(bytes: number): Promise<boolean> {
    if (bytes > this.limits.bytesPerEntity) return false;
    const minute = Math.floor(this.clock.now() / MINUTE_MS) + 1;
    const buckets = Array.from({ length: TOTAL_MINUTES + 2 }, (_, i) => idempotencyBytesKey(minute - i, this.prefix));
    // A minute below 0: its key lost (a Redis restart) before the answers counted in it were dropped.
    const stored = (await this.redis.mget(...buckets)).reduce((sum, v) => sum + Math.max(0, Number(v ?? 0)), 0);
    return stored + bytes <= this.limits.totalBytes;
  }

  /**
   * Counts a stored answer's bytes in its minute and takes off the dropped ones' (`store_answer-3.lua`'s `now`,
   * then minute and bytes pairs): the total counts no more than a busy entity's cap, so idempotency stays on.
   */
  private async count(bytes: number, [now, ...freed]: number[]): Promise<void> {
    const minute = Math.floor(now / MINUTE_MS);
    const add = async (m: number, by: number) => {
      const bucket = idempotencyBytesKey(m, this.prefix);
      await this.redis.incrby(bucket, by);
      await this.redis.pexpireat(bucket, (m + TOTAL_MINUTES) * MINUTE_MS);
    };
    const writes = [add(minute, bytes)];
    // Only minutes still summed: a dropped answer was stored within its life, so they all are.
    for (let i = 0; i + 1 < freed.length; i += 2)
      if (freed[i] > minute - TOTAL_MINUTES) writes.push(add(freed[i], -freed[i + 1]));
    await Promise.all(writes);
  }

  private async answer(key: string): Promise<StoredAnswer | undefined> {
    const raw = await this.redis.get(key);
    return raw === null ? undefined : decodeAnswer(raw);
  }
}
