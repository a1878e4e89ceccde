import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { register, takeIds } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/redis/keys';

/**
 * A refill lock that came over with replication (its holder was refilling
 * when the master died) must not block the entity for the rest of its TTL
 * once the epoch has changed: the refiller drops it and serves at once.
 */
describeWithServices('refill lock from before an epoch change (private redis-server, MariaDB)', { mysql: true }, () => {
  let redisServer: RedisServer | undefined;
  let instance: Instance | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  let direct: Redis | undefined;

  beforeAll(async () => {
    schema = await createTestSchema();
    redisServer = await startRedisServer('none');
    direct = new Redis(redisServer.url);
    instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: redisServer.url });
  });

  afterAll(async () => {
    direct?.disconnect();
    await instance?.stop();
    await redisServer?.stop();
    await schema?.drop();
  });

  it('is dropped when the pool is refused for its epoch, and ids flow again well before its TTL, none repeated', async () => {
    const key = uniqueKey('stale');
    const secret = await register(instance!.url, { key, step: 100, maxSizePerTimes: 10, maxSizePerSecond: 0 });
    const issued: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await takeIds(instance!.url, key, secret, 10);
      expect(res.status).toBe(200);
      issued.push(...res.body.ids);
    }
    // As after a failover: the pool was filled in another epoch, and the lock
    // of a refill that was under way there came over with it (10 s left).
    await direct!.set(entityKeys(key).epoch, 'old-run-id:old-replid');
    await direct!.set(entityKeys(key).lock, 'a-refiller-on-the-old-master', 'PX', 10_000);

    const started = Date.now();
    let served: string[] | undefined;
    while (!served && Date.now() - started < 8000) {
      const res = await takeIds(instance!.url, key, secret, 10);
      if (res.status === 200) served = res.body.ids;
      else expect(res.status).toBe(503);
    }
    const waited = Date.now() - started;
    expect(served).toBeDefined();
    expect(waited).toBeLessThan(3000);
    expect(served!.filter((id) => issued.includes(id))).toEqual([]);
    expect(BigInt(served![0])).toBeGreaterThan(BigInt(issued.at(-1)!));
  });
});
