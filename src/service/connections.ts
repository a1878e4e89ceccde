/** The connections a service starts with: the database (stride checked), Redis (functions loaded), and the claim on Redis's keys. */
import type { Clock } from '../clock';
import { type Config, DATABASE_URL_VARIABLE } from '../config/config';
import { type Database, openDatabase } from '../db/database';
import { deploymentId } from '../db/deployment-id';
import { claimRedisKeys } from '../redis/deployment-claim';
import { loadFunctionsAtStart } from '../redis/functions';
import { type RedisClient, closeRedis, connectRedis } from '../redis/connection';
import { checkStride } from '../segment/stride-record';
import { type IncumbentDatabase, type IncumbentKind, incumbentDatabase } from '../segment/incumbent-rows';
import type { Built } from './resources';

/** The database, migrated, with this deployment's stride mapping checked against the one it recorded. */
export async function buildDatabase(config: Config, clock: Clock): Promise<Built<Database>> {
  const db = await openDatabase(config.databaseUrl, { clock, urlSource: DATABASE_URL_VARIABLE });
  try {
    await checkStride(db, config.strideCount, config.strideIndex, clock);
  } catch (err) {
    await db.close();
    throw err;
  }
  return { value: db, close: () => db.close() };
}

/**
 * Leaf's and Tinyid's databases, for entities in a live cutover: pools that
 * connect on the first reservation, so an incumbent down at start-up stops
 * only those entities (503, and /readyz says so), never the service.
 */
export function buildIncumbents(config: Config): Built<ReadonlyMap<IncumbentKind, IncumbentDatabase>> {
  const dbs = new Map<IncumbentKind, IncumbentDatabase>();
  for (const kind of ['leaf', 'tinyid'] as const) {
    const url = config.incumbentUrls[kind];
    if (url) dbs.set(kind, incumbentDatabase(kind, url));
  }
  return {
    value: dbs,
    close: async () => {
      for (const db of dbs.values()) await db.close();
    },
  };
}

/** The shared Redis with idpool's function library loaded (a server without Functions refused), or undefined for the in-process pool. */
export async function buildRedis(config: Config): Promise<Built<RedisClient | undefined>> {
  if (!config.redis) return { value: undefined };
  const redis = await connectRedis(config.redis, { socketTimeoutMs: config.redisSocketTimeoutMs });
  try {
    await loadFunctionsAtStart(redis, config.redis);
  } catch (err) {
    await closeRedis(redis);
    throw err;
  }
  return { value: redis, close: () => closeRedis(redis) };
}

/**
 * Records this deployment (the id in its database) as the owner of the Redis
 * keys under `prefix`; refuses to start when another deployment owns them
 * (`redis/deployment-claim.ts`). Nothing to claim without Redis.
 */
export async function claimDeployment(db: Database, redis: RedisClient | undefined, prefix: string): Promise<void> {
  if (!redis) return;
  await claimRedisKeys(redis, prefix, { id: await deploymentId(db), database: db.description });
}
