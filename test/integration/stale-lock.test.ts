import { expect, it } from 'vitest';
import { systemClock } from '../../src/clock';
import { RedisPoolStore } from '../../src/pool/redis-pool-store';
import { RedisRefillLock } from '../../src/pool/refill-lock';
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
  it('keeps a lock taken in this epoch though the pool is not reset yet: the first refill of a new entity, or the first after a failover', async () => {
    const prefix = `idpool-t-stale-${process.pid}`;
    const store = new RedisPoolStore(run.direct, prefix);
    const lock = new RedisRefillLock(run.direct, systemClock, 10_000, prefix, 'host-a:1');
    const keys = (key: string) => entityKeys(key, prefix);
    // A new entity: no epoch marker yet, its first refill holds the lock on its way to the reset. Another
    // instance, refused for the epoch, must not drop it (two refillers at once: a range refused by the fence).
    const held = await lock.acquire('new');
    expect(held).not.toBeNull();
    expect(await run.direct.get(keys('new').lock)).toMatch(/^host-a:1:[0-9a-f]+@[0-9a-f]+:[0-9a-f]+$/);
    expect(await store.unlockStale('new')).toBe(false);
    // After a failover: the marker is the old epoch's until the holder resets the pool.
    await run.direct.set(keys('new').epoch, 'old-run-id:old-replid');
    expect(await store.unlockStale('new')).toBe(false);
    await held!.release();
    expect(await run.direct.exists(keys('new').lock)).toBe(0);
    // A lock taken in the old epoch is dropped whatever the marker says; one of an older release (no epoch in it)
    // as the marker says.
    await run.direct.set(keys('old').lock, 'host-b:2:abc@old-run-id:old-replid', 'PX', 10_000);
    expect(await store.unlockStale('old')).toBe(true);
    await run.direct.set(keys('older').lock, 'host-b:2:abc', 'PX', 10_000);
    await run.direct.set(keys('older').epoch, 'old-run-id:old-replid');
    expect(await store.unlockStale('older')).toBe(true);
  });
});
