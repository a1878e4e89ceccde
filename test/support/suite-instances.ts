import Redis from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type Instance, type RedisServer, startInstance, startRedisServer } from './processes';
import { type SqlServer, type TestSchema, createTestSchema, sharedRedisEnv } from './services';

/**
 * The instances a suite started, by the names it gave them, and the schema
 * they share; with `privateRedis`, the redis-server of their own and a
 * client of it (`direct`) too.
 */
export type SuiteInstances<K extends string> = Record<K, Instance> & {
  readonly schema: TestSchema;
  readonly redisServer: RedisServer;
  readonly direct: Redis;
};

export interface SuiteInstancesOptions {
  /** The SQL server of the schema (MariaDB unless named). */
  server?: SqlServer;
  /** A redis-server of the suite's own rather than a key prefix of the shared one. */
  privateRedis?: boolean;
  /** The start's own timeout, where the suite had one shorter than the hooks' default. */
  timeoutMs?: number;
}

/**
 * Starts the instances of a suite before its tests and stops them after,
 * all on one fresh schema and one Redis (a key prefix of the shared one, or
 * a private server): `envs` gets that environment and names each
 * instance's own. The first named starts first (it migrates the schema),
 * the others then at once. The object returned is filled in by
 * `beforeAll`: read it in the tests.
 */
export function suiteInstances<K extends string>(
  envs: (base: Record<string, string>) => Record<K, Record<string, string>>,
  { server = 'mysql', privateRedis = false, timeoutMs }: SuiteInstancesOptions = {},
): SuiteInstances<K> {
  const instances = {} as Record<K, Instance>;
  const suite = instances as Record<K, Instance> & { schema: TestSchema; redisServer: RedisServer; direct: Redis };
  const started: Instance[] = [];
  beforeAll(async () => {
    suite.schema = await createTestSchema(server);
    let redisEnv: Record<string, string> = sharedRedisEnv();
    if (privateRedis) {
      suite.redisServer = await startRedisServer('none');
      suite.direct = new Redis(suite.redisServer.url);
      redisEnv = { IDPOOL_REDIS_URL: suite.redisServer.url };
    }
    const wanted = Object.entries(envs({ IDPOOL_DATABASE_URL: suite.schema.url, ...redisEnv })) as [
      K,
      Record<string, string>,
    ][];
    const start = async ([name, env]: [K, Record<string, string>]) => {
      started.push((instances[name] = await startInstance(env)));
    };
    // The first alone, so the schema is migrated once; the others together.
    const [first, ...others] = wanted;
    await start(first);
    const failed = (await Promise.allSettled(others.map(start))).find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
  }, timeoutMs);
  afterAll(async () => {
    suite.direct?.disconnect();
    await Promise.all(started.map((i) => i.stop()));
    await suite.redisServer?.stop();
    await suite.schema?.drop();
  });
  return suite;
}
