import Redis from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database';
import { deploymentKey } from '../../src/redis/keys';
import { register, takeIds } from '../support/http';
import { type Instance, runToExit, startInstance } from '../support/processes';
import {
  REDIS_URL,
  type TestSchema,
  clearPrefix,
  createTestSchema,
  sharedRedisEnv,
  testPrefix,
} from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

describeWithServices('two deployments on one Redis (issue 28)', { mysql: true, redis: true }, () => {
  const schemas: TestSchema[] = [];
  const instances: Instance[] = [];
  const prefixes: string[] = [];
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    const redis = new Redis(REDIS_URL);
    for (const prefix of prefixes) await clearPrefix(redis, prefix);
    redis.disconnect();
    await Promise.all(schemas.map((s) => s.drop()));
  });

  const deploymentIdOf = async (schema: TestSchema) => {
    const db = await openDatabase(schema.url);
    try {
      return (await db.query<{ d: string }>('SELECT deployment_id AS d FROM idpool_meta WHERE id = 1'))[0].d;
    } finally {
      await db.close();
    }
  };

  it('a second deployment with another database on the same keys refuses to start, naming both and the fix; another prefix starts', async () => {
    const [first, second] = await Promise.all([createTestSchema(), createTestSchema()]);
    schemas.push(first, second);
    const prefix = testPrefix();
    const other = testPrefix();
    prefixes.push(prefix, other);

    const a = await startInstance({ IDPOOL_DATABASE_URL: first.url, ...sharedRedisEnv(prefix) });
    instances.push(a);
    const firstId = await deploymentIdOf(first);
    expect(firstId).toMatch(/^[0-9a-f-]{36}$/);
    const redis = new Redis(REDIS_URL);
    try {
      expect(JSON.parse((await redis.get(deploymentKey(prefix)))!)).toMatchObject({ id: firstId });
    } finally {
      redis.disconnect();
    }
    // A second instance of the same deployment (same database) shares the keys.
    const a2 = await startInstance({ IDPOOL_DATABASE_URL: first.url, ...sharedRedisEnv(prefix) });
    instances.push(a2);

    const refused = await runToExit({ IDPOOL_DATABASE_URL: second.url, ...sharedRedisEnv(prefix) });
    expect(refused.code).toBe(2);
    const secondId = await deploymentIdOf(second);
    expect(secondId).not.toBe(firstId);
    const message = refused.stderr;
    expect(message).toContain(`the Redis keys ${prefix}:* belong to deployment ${firstId}`);
    expect(message).toContain(`/${first.name}`);
    expect(message).toContain(`is deployment ${secondId}`);
    expect(message).toContain(`/${second.name}`);
    expect(message).toMatch(/another Redis database .* or another key prefix \(IDPOOL_REDIS_KEY_PREFIX\)/);

    // The fix: its own prefix on the same Redis database.
    const b = await startInstance({ IDPOOL_DATABASE_URL: second.url, ...sharedRedisEnv(other) });
    instances.push(b);
    const secret = await register(b.url, { key: 'orders', maxSizePerSecond: 0 });
    expect((await takeIds(b.url, 'orders', secret, 10)).status).toBe(200);
    const check = new Redis(REDIS_URL);
    try {
      // Its pools live under its own prefix, and it owns that prefix.
      expect(await check.exists(`${other}:{orders}:fence`)).toBe(1);
      expect(JSON.parse((await check.get(deploymentKey(other)))!)).toMatchObject({ id: secondId });
    } finally {
      check.disconnect();
    }
  }, 120_000);
});
