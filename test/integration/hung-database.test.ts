import { afterEach, describe, expect, it } from 'vitest';
import { SQL_STATEMENT_TIMEOUT_MS } from '../../src/db/mysql-driver';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type PrivateMariadb, privateMariadbPossible, startPrivateMariadb } from '../support/mariadb';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { sleep } from '../support/wait';

/** A statement timeout plus room for a loaded machine: no answer may take longer. */
const ANSWER_BOUND_MS = SQL_STATEMENT_TIMEOUT_MS + 3000;

describe('a hung database (SIGSTOPped mariadbd): bounded waits (invariant 7)', () => {
  let mariadb: PrivateMariadb | undefined;
  let redisServer: RedisServer | undefined;
  let instance: Instance | undefined;

  afterEach(async () => {
    mariadb?.thaw();
    await instance?.stop();
    await redisServer?.stop();
    await mariadb?.destroy();
    instance = redisServer = mariadb = undefined;
  });

  it('requests answer 503 within the statement timeout while it is frozen, and ids flow again after SIGCONT', async (ctx) => {
    if (!privateMariadbPossible()) {
      if (process.env.IDPOOL_REQUIRE_SERVICES === '1')
        throw new Error('mariadbd is needed for this test (IDPOOL_REQUIRE_SERVICES=1)');
      return ctx.skip();
    }
    [mariadb, redisServer] = await Promise.all([startPrivateMariadb(), startRedisServer('none')]);
    instance = await startInstance({ IDPOOL_DATABASE_URL: mariadb.url, IDPOOL_REDIS_URL: redisServer.url });
    const key = uniqueKey('orders');
    const secret = await register(instance.url, {
      key,
      step: 100,
      maxPoolSize: 500,
      maxSizePerSecond: 0,
      maxSizePerTimes: 5,
    });
    const issued: string[] = [];
    expect((await takeIds(instance.url, key, secret, 5)).status).toBe(200);

    mariadb.freeze();
    const statuses: number[] = [];
    let slowest = 0;
    const until = Date.now() + 3 * SQL_STATEMENT_TIMEOUT_MS;
    while (Date.now() < until) {
      const started = Date.now();
      const [take, admin] = await Promise.all([
        takeIds(instance.url, key, secret, 5),
        call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN }),
      ]);
      slowest = Math.max(slowest, Date.now() - started);
      if (take.status === 200) issued.push(...take.body.ids);
      else {
        expect(take.status).toBe(503);
        expect(take.headers.get('retry-after')).toMatch(/^\d+$/);
      }
      statuses.push(take.status, admin.status);
      expect(admin.status).toBe(503); // needs the database for currentOffset
      expect(admin.body.error.code).toBe('unavailable');
    }
    expect(slowest).toBeLessThan(ANSWER_BOUND_MS);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(instance.proc.exitCode).toBeNull();

    mariadb.thaw();
    const thawedAt = Date.now();
    for (;;) {
      const res = await takeIds(instance.url, key, secret, 5);
      if (res.status === 200) {
        issued.push(...res.body.ids);
        break;
      }
      if (Date.now() - thawedAt > 20_000)
        throw new Error(`no ids 20 s after SIGCONT: ${res.status} ${JSON.stringify(res.body)}`);
      await sleep(100);
    }
    // The whole pool is served again, through refills: the connections dropped on timeout were replaced.
    for (let i = 0; i < 200; i++) {
      const res = await takeIds(instance.url, key, secret, 5);
      if (res.status === 200) issued.push(...res.body.ids);
      else await sleep(50);
    }
    expect(issued.length).toBeGreaterThan(500);
    expect(new Set(issued).size).toBe(issued.length);
    const admin = await call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
    expect(admin.status).toBe(200);
    await ctx.annotate?.(
      `slowest answer while frozen: ${slowest} ms; first id ${Date.now() - thawedAt} ms after SIGCONT`,
    );
  }, 90_000);
});
