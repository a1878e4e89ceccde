import { expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { register, takeIds } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/redis/keys';
import { suiteInstances } from '../support/suite-instances';

/**
 * A refill lock that came over with replication (its holder was refilling
 * when the master died) must not block the entity for the rest of its TTL
 * once the epoch has changed: the refiller drops it and serves at once.
 */
describeWithServices('refill lock from before an epoch change (private redis-server, MariaDB)', { mysql: true }, () => {
  const run = suiteInstances((base) => ({ instance: base }), { privateRedis: true });

  it('is dropped when the pool is refused for its epoch, and ids flow again well before its TTL, none repeated', async () => {
    const key = uniqueKey('stale');
    const secret = await register(run.instance.url, { key, step: 100, maxSizePerTimes: 10, maxSizePerSecond: 0 });
    const issued: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await takeIds(run.instance.url, key, secret, 10);
      expect(res.status).toBe(200);
      issued.push(...res.body.ids);
    }
    // As after a failover: the pool was filled in another epoch, and the lock
    // of a refill that was under way there came over with it (10 s left).
    await run.direct.set(entityKeys(key).epoch, 'old-run-id:old-replid');
    await run.direct.set(entityKeys(key).lock, 'a-refiller-on-the-old-master', 'PX', 10_000);

    const started = Date.now();
    let served: string[] | undefined;
    while (!served && Date.now() - started < 8000) {
      const res = await takeIds(run.instance.url, key, secret, 10);
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
