import Redis from 'ioredis';
import { type PrivateMariadb, startPrivateMariadb } from './mariadb';
import { type Instance, type RedisServer, startInstance, startRedisServer } from './processes';
import { createTestSchema } from './services';

/** A database and a redis-server of the test's own, with service processes on both. */
export interface PrivateDeployment {
  readonly databaseUrl: string;
  readonly redis: RedisServer;
  /** A client of the private Redis, for looking at what the service stored. */
  readonly direct: Redis;
  /** Starts one more service process on them, with `env` over the connection variables (waiting `timeoutMs` for it to listen). */
  start(env?: Record<string, string>, timeoutMs?: number): Promise<Instance>;
  /** Stops the processes, then Redis, then drops the database. */
  stop(): Promise<void>;
}

async function deployOn(
  starting: Promise<{ url: string; drop(): Promise<void> }>,
  redisArgs: string[],
): Promise<PrivateDeployment> {
  const [database, redis] = await Promise.all([starting, startRedisServer('none', redisArgs)]);
  const direct = new Redis(redis.url);
  const instances: Instance[] = [];
  return {
    databaseUrl: database.url,
    redis,
    direct,
    async start(env = {}, timeoutMs?: number) {
      const instance = await startInstance(
        { IDPOOL_DATABASE_URL: database.url, IDPOOL_REDIS_URL: redis.url, ...env },
        timeoutMs,
      );
      instances.push(instance);
      return instance;
    },
    async stop() {
      direct.disconnect();
      for (const instance of instances) await instance.stop();
      await redis.stop();
      await database.drop();
    },
  };
}

/** See {@link PrivateDeployment}: a schema of its own on the shared MariaDB; `redisArgs` go to redis-server (`--maxmemory-policy …`). */
export async function privateDeployment(redisArgs: string[] = []): Promise<PrivateDeployment> {
  return deployOn(createTestSchema(), redisArgs);
}

/** A {@link PrivateDeployment} on a mariadbd of its own, which the test may kill, freeze or make read-only. */
export interface PrivateMariadbDeployment extends PrivateDeployment {
  readonly mariadb: PrivateMariadb;
}

/** See {@link PrivateMariadbDeployment}. */
export async function privateMariadbDeployment(redisArgs: string[] = []): Promise<PrivateMariadbDeployment> {
  const starting = startPrivateMariadb();
  const deployment = await deployOn(
    starting.then((mariadb) => ({ url: mariadb.url, drop: () => mariadb.destroy() })),
    redisArgs,
  );
  return { ...deployment, mariadb: await starting };
}
