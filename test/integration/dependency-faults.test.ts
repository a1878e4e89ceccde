import Redis from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { entityKeys } from '../../src/redis/keys';
import { describeWithServices } from '../support/describe-with-services';
import { watchEntity } from '../support/outage';
import { type PrivateDeployment, privateDeployment, privateMariadbDeployment } from '../support/private-deployment';
import { sleep } from '../support/wait';

describeWithServices('no Redis fault ends the process (docs/design.md invariant 7)', { mysql: true }, () => {
  let deployment: PrivateDeployment | undefined;

  afterEach(async () => {
    await deployment?.stop();
    deployment = undefined;
  });

  it('kill -9 Redis while a 5,000,000-id pool is being filled, three times: the process lives and serves again, no id twice', async () => {
    deployment = await privateDeployment();
    const { redis } = deployment;
    // The largest pool allowed; step × 5 ≤ maxPoolSize × (1 − 80 %), as validation requires.
    const entity = await watchEntity(await deployment.start(), {
      step: 100_000,
      maxPoolSize: 5_000_000,
      maxSizePerTimes: 1000,
    });
    const ids = entityKeys(entity.key).ids;
    const probe = new Redis(redis.port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined);
    try {
      for (let round = 0; round < 3; round++) {
        const traffic = entity.load();
        // Kill Redis once the fill is under way (a part of the 5M ids pushed).
        await probe.connect();
        const deadline = Date.now() + 20_000;
        let size = 0;
        while ((size = await probe.llen(ids)) < 20_000 || size > 4_000_000) {
          if (Date.now() > deadline) throw new Error(`fill never reached the kill window (size ${size})`);
          // Already full: empty the pool, so the sweep (≤ 1 s) starts another fill.
          if (size > 4_000_000) await probe.del(ids);
          await sleep(5);
        }
        probe.disconnect();
        await redis.kill9();
        await sleep(1500);
        expect(entity.instance.proc.exitCode, entity.instance.output().slice(-3000)).toBeNull();
        await redis.restart();
        await entity.servesAgain();
        await sleep(300);
        await traffic.stop();
      }
    } finally {
      probe.disconnect();
    }
    expect(entity.issued.length).toBeGreaterThan(100);
    entity.expectUnharmed();
    // Every take while Redis was away or came back empty was a 503 (the
    // library reloaded by a concurrent take is no 500: redis-take.test.ts).
    entity.expectNo500();
    expect(entity.instance.output()).not.toMatch(/MaxRetriesPerRequestError[^\n]*uncaught/);
  }, 120_000);
});

describeWithServices('no database fault ends the process (a private mariadbd)', { privateMariadb: true }, () => {
  let deployment: PrivateDeployment | undefined;

  afterEach(async () => {
    await deployment?.stop();
    deployment = undefined;
  });

  it('kill -9 the database during load, twice: the process lives, answers 503 when the pool runs dry, and serves again', async () => {
    const own = await privateMariadbDeployment();
    deployment = own;
    // A small pool, so the load needs the database every few hundred ids.
    const entity = await watchEntity(await own.start());
    for (let round = 0; round < 2; round++) {
      const traffic = entity.load();
      await sleep(500);
      await own.mariadb.kill9();
      // Long enough for the pool to run dry and for requests to meet the dead database.
      await sleep(3000);
      expect(entity.instance.proc.exitCode, entity.instance.output().slice(-3000)).toBeNull();
      await own.mariadb.restart();
      await entity.servesAgain();
      await sleep(500);
      await traffic.stop();
      expect(traffic.statuses.get(503) ?? 0).toBeGreaterThan(0);
    }
    entity.expectUnharmed();
    entity.expectNo500();
  }, 120_000);
});
