import Redis from 'ioredis';
import { type Instance, type RedisServer, startInstance, startRedisServer } from './processes';
import { type TestSchema, createTestSchema } from './services';

/** A MariaDB schema and a redis-server of the test's own, with service processes on both. */
export interface PrivateDeployment {
  readonly schema: TestSchema;
  readonly redis: RedisServer;
  /** A client of the private Redis, for looking at what the service stored. */
  readonly direct: Redis;
  /** Starts one more service process on them, with `env` over the connection variables. */
  start(env?: Record<string, string>): Promise<Instance>;
  /** Stops the processes, then Redis, then drops the schema. */
  stop(): Promise<void>;
}

/** See {@link PrivateDeployment}; `redisArgs` go to redis-server (`--maxmemory-policy …`). */
export async function privateDeployment(redisArgs: string[] = []): Promise<PrivateDeployment> {
  const schema = await createTestSchema();
  const redis = await startRedisServer('none', redisArgs);
  const direct = new Redis(redis.url);
  const instances: Instance[] = [];
  return {
    schema,
    redis,
    direct,
    async start(env = {}) {
      const instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: redis.url, ...env });
      instances.push(instance);
      return instance;
    },
    async stop() {
      direct.disconnect();
      for (const instance of instances) await instance.stop();
      await redis.stop();
      await schema.drop();
    },
  };
}
