import Redis from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { register, takeIds } from '../support/http';
import { type PrivateMariadb, privateMariadbPossible, startPrivateMariadb } from '../support/mariadb';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/pool/keys';
import { sleep } from '../support/wait';

/** One sequential client taking ids until stopped; 503s are expected while a dependency is down. */
function load(instance: Instance, key: string, secret: string) {
  const ids: string[] = [];
  const statuses = new Map<number, number>();
  const unexpected: string[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const res = await takeIds(instance.url, key, secret, 10).catch(() => undefined);
      const status = res?.status ?? 0;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === 200) ids.push(...res!.body.ids);
      else if (status !== 503 || !/^\d+$/.test(res!.headers.get('retry-after') ?? ''))
        unexpected.push(`${status} ${JSON.stringify(res?.body)}`);
      if (status !== 200) await sleep(20);
    }
  })();
  return {
    ids,
    statuses,
    async stop() {
      running = false;
      await done;
      expect(unexpected).toEqual([]);
    },
  };
}

/** Waits until the instance hands out ids again; returns how long that took. */
async function servesAgain(
  instance: Instance,
  key: string,
  secret: string,
  into: string[],
  timeoutMs = 30_000,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await takeIds(instance.url, key, secret, 1).catch(() => undefined);
    if (res?.status === 200) {
      into.push(...res.body.ids);
      return Date.now() - started;
    }
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `no id within ${timeoutMs} ms; last ${res?.status} ${JSON.stringify(res?.body)}\n${instance.output().slice(-3000)}`,
      );
    await sleep(50);
  }
}

describeWithServices('no dependency fault ends the process (docs/design.md invariant 7)', { mysql: true }, () => {
  let redisServer: RedisServer | undefined;
  let mariadb: PrivateMariadb | undefined;
  let instance: Instance | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;

  afterEach(async () => {
    await instance?.stop();
    await redisServer?.stop();
    await mariadb?.destroy();
    await schema?.drop();
    instance = redisServer = mariadb = schema = undefined;
  });

  it('kill -9 Redis while a 5,000,000-id pool is being filled, three times: the process lives and serves again, no id twice', async () => {
    schema = await createTestSchema();
    redisServer = await startRedisServer('none');
    instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: redisServer.url });
    const key = uniqueKey('bulk');
    // The largest pool allowed; step × 5 ≤ maxPoolSize × (1 − 80 %), as validation requires.
    const secret = await register(instance.url, {
      key,
      step: 100_000,
      maxPoolSize: 5_000_000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 1000,
    });
    const issued: string[] = [];
    const probe = new Redis(redisServer.port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined);
    try {
      for (let round = 0; round < 3; round++) {
        const traffic = load(instance, key, secret);
        // Kill Redis once the fill is under way (a part of the 5M ids pushed).
        await probe.connect();
        const deadline = Date.now() + 20_000;
        let size = 0;
        while ((size = await probe.llen(entityKeys(key).ids)) < 20_000 || size > 4_000_000) {
          if (Date.now() > deadline) throw new Error(`fill never reached the kill window (size ${size})`);
          // Already full: empty the pool, so the sweep (≤ 1 s) starts another fill.
          if (size > 4_000_000) await probe.del(entityKeys(key).ids);
          await sleep(5);
        }
        probe.disconnect();
        await redisServer.kill9();
        await sleep(1500);
        expect(instance.proc.exitCode, instance.output().slice(-3000)).toBeNull();
        await redisServer.restart();
        await servesAgain(instance, key, secret, issued);
        await sleep(300);
        await traffic.stop();
        issued.push(...traffic.ids);
        expect(instance.proc.exitCode).toBeNull();
      }
    } finally {
      probe.disconnect();
    }
    expect(issued.length).toBeGreaterThan(100);
    expect(new Set(issued).size).toBe(issued.length);
    expect(instance.output()).not.toMatch(/unhandled_rejection|MaxRetriesPerRequestError[^\n]*uncaught/);
  }, 120_000);

  it('kill -9 the database during load, twice: the process lives, answers 503 when the pool runs dry, and serves again', async (ctx) => {
    if (!privateMariadbPossible()) {
      if (process.env.IDPOOL_REQUIRE_SERVICES === '1')
        throw new Error('mariadbd is needed for this test (IDPOOL_REQUIRE_SERVICES=1)');
      return ctx.skip();
    }
    [mariadb, redisServer] = await Promise.all([startPrivateMariadb(), startRedisServer('none')]);
    instance = await startInstance({ IDPOOL_DATABASE_URL: mariadb.url, IDPOOL_REDIS_URL: redisServer.url });
    const key = uniqueKey('orders');
    // A small pool, so the load needs the database every few hundred ids.
    const secret = await register(instance.url, {
      key,
      step: 100,
      maxPoolSize: 1000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 10,
    });
    const issued: string[] = [];
    for (let round = 0; round < 2; round++) {
      const traffic = load(instance, key, secret);
      await sleep(500);
      await mariadb.kill9();
      // Long enough for the pool to run dry and for requests to meet the dead database.
      await sleep(3000);
      expect(instance.proc.exitCode, instance.output().slice(-3000)).toBeNull();
      await mariadb.restart();
      await servesAgain(instance, key, secret, issued);
      await sleep(500);
      await traffic.stop();
      issued.push(...traffic.ids);
      expect(traffic.statuses.get(503) ?? 0).toBeGreaterThan(0);
    }
    expect(instance.proc.exitCode).toBeNull();
    expect(new Set(issued).size).toBe(issued.length);
    expect(instance.output()).not.toMatch(/unhandled_rejection/);
  }, 120_000);
});
