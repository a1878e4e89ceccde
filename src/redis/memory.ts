import { type default as Redis, ReplyError } from 'ioredis';
import { type RedisClient, mastersOf } from './connection';
import { ConfigError } from '../errors';
import { infoField } from './info';
import type { Logger } from '../logger';

/** Bytes one ready id takes in a pool list, for a warning: bench/segment.bench.ts measured 5.0 below 2^32, 10.1 near 2^40: 10 covers most lines. */
const ESTIMATED_BYTES_PER_ID = 10;

/** `maxmemory` (bytes, 0 = no limit) and `maxmemory-policy`, from CONFIG GET or, where CONFIG is disabled, from INFO memory. */
async function redisMemorySettings(redis: Redis): Promise<{ maxmemory: number; policy: string }> {
  try {
    const [, maxmemory] = (await redis.config('GET', 'maxmemory')) as string[];
    const [, policy] = (await redis.config('GET', 'maxmemory-policy')) as string[];
    return { maxmemory: Number(maxmemory), policy };
  } catch (err) {
    // Refused by the server (CONFIG renamed away, an ACL without it): INFO says the same.
    if (!(err instanceof ReplyError)) throw err;
    const info = await redis.info('memory');
    const policy = infoField(info, 'maxmemory_policy');
    const maxmemory = infoField(info, 'maxmemory');
    if (!policy || maxmemory === undefined)
      throw new Error('neither CONFIG GET nor INFO memory reports maxmemory-policy', { cause: err });
    return { maxmemory: Number(maxmemory), policy };
  }
}

/**
 * Start-up check of every master (docs/design.md "Redis keys"): an `allkeys-*` policy may evict a fence, so
 * ids repeat ({@link ConfigError}); warns when `maxmemory` is below its share of every pool full.
 */
export async function checkRedisMemory(redis: RedisClient, poolCeilingIds: number, log: Logger): Promise<void> {
  const masters = mastersOf(redis);
  for (const node of masters) await checkNodeMemory(node, Math.ceil(poolCeilingIds / masters.length), log);
}

async function checkNodeMemory(redis: Redis, poolCeilingIds: number, log: Logger): Promise<void> {
  const { maxmemory, policy } = await redisMemorySettings(redis);
  if (policy.startsWith('allkeys-')) {
    throw new ConfigError(
      'Redis maxmemory-policy',
      `is ${policy}: it may evict idpool's fences and epoch markers, and ids would repeat; set noeviction (or a volatile-* policy)`,
    );
  }
  const ceilingBytes = poolCeilingIds * ESTIMATED_BYTES_PER_ID;
  if (maxmemory > 0 && ceilingBytes > maxmemory) {
    log.warn(
      {
        alarm: 'redis_maxmemory_low',
        maxmemory,
        policy,
        poolCeilingIds,
        estimatedBytes: ceilingBytes,
        bytesPerId: ESTIMATED_BYTES_PER_ID,
      },
      `Redis maxmemory (${maxmemory} B) is below what full pools could take (~${ceilingBytes} B at ~${ESTIMATED_BYTES_PER_ID} B/id); refills will fail with OOM (503) before the pools reach their ceiling`,
    );
  }
}
