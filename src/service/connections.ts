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

/** Incumbent databases of live cutovers, connected at the first reservation: one down stops only its entities. */
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

/** Claims the Redis keys under `prefix` for this deployment; refuses to start when another owns them. */
export async function claimDeployment(db: Database, redis: RedisClient | undefined, prefix: string): Promise<void> {
  if (!redis) return;
  await claimRedisKeys(redis, prefix, { id: await deploymentId(db), database: db.description });
}
