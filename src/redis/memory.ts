import { type default as Redis, ReplyError } from 'ioredis';
import { type RedisClient, mastersOf } from './connection';
import { ConfigError } from '../errors';
import { infoField } from './info';
import type { Logger } from '../logger';

/**
 * Redis memory one ready id takes in a pool list, for the start-up estimate:
 * bench/segment.bench.ts measured 5.0 B/id for ids below 2^32 and 10.1 B/id
 * near 2^40 (listpack-encoded integers); 10 B covers the ids most
 * deployments issue. An estimate for a warning, not a limit.
 */
const ESTIMATED_BYTES_PER_ID = 10;

export interface RedisMemorySettings {
  /** Bytes; 0 = no limit. */
  maxmemory: number;
  policy: string;
}

/** `maxmemory` and `maxmemory-policy`, from CONFIG GET or, where CONFIG is disabled (renamed away), from INFO memory. */
async function redisMemorySettings(redis: Redis): Promise<RedisMemorySettings> {
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
 * Start-up check (docs/design.md "Redis keys") on every master: an `allkeys-*`
 * policy may evict a fence or an epoch marker, after which ids repeat, so
 * idpool refuses to start ({@link ConfigError}, exit code 2). Warns when
 * `maxmemory` is set below what every pool full to its `maxPoolSize` could
 * take (a Cluster's masters share the pools: each is checked for its share).
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
