import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { afterEach, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { call, ADMIN_TOKEN, register, takeIds } from '../support/http';
import { type PrivateMariadb, privateMariadbPossible, startPrivateMariadb } from '../support/mariadb';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { entityKeys } from '../../src/pool/keys';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { sleep } from '../support/wait';

/** Sends `n` take requests; every one must answer 503 unavailable with Retry-After. */
async function expectUnavailable(instance: Instance, key: string, secret: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await takeIds(instance.url, key, secret, 5);
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.error?.code).toBe('unavailable');
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  }
}

/** Takes what the pool holds (5 at a time, as expectUnavailable asks) until it answers something else. */
async function drainPool(instance: Instance, key: string, secret: string, into: string[]): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const res = await takeIds(instance.url, key, secret, 5);
    if (res.status !== 200) return;
    into.push(...res.body.ids);
  }
  throw new Error('the pool never ran dry');
}

async function waitServing(instance: Instance, key: string, secret: string, into: string[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await takeIds(instance.url, key, secret, 5);
    if (res.status === 200) return void into.push(...res.body.ids);
    if (Date.now() > deadline) throw new Error(`not serving again: ${res.status} ${JSON.stringify(res.body)}`);
    await sleep(50);
  }
}

/** Alarm lines of one kind in the instance's log. */
const alarmLines = (instance: Instance, kind: string) =>
  instance
    .output()
    .split('\n')
    .filter((l) => l.includes('"alarm":"dependency_unavailable"') && l.includes(`"kind":"${kind}"`));

describeWithServices('dependency errors answer 503 unavailable, never 500 (invariant 7)', { mysql: true }, () => {
  const redisServers: RedisServer[] = [];
  let mariadb: PrivateMariadb | undefined;
  let instance: Instance | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  const clients: Redis[] = [];

  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await instance?.stop();
    for (const r of redisServers.splice(0)) await r.stop();
    await mariadb?.destroy();
    await schema?.drop();
    instance = mariadb = schema = undefined;
  });

  async function start(
    redisArgs: string[] = [],
  ): Promise<{ redis: RedisServer; direct: Redis; key: string; secret: string }> {
    schema = await createTestSchema();
    const redis = await startRedisServer('none', redisArgs);
    redisServers.push(redis);
    const direct = new Redis(redis.url);
    clients.push(direct);
    instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: redis.url });
    const key = uniqueKey('orders');
    const secret = await register(instance.url, {
      key,
      step: 100,
      maxPoolSize: 1000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 10,
    });
    return { redis, direct, key, secret };
  }

  it('READONLY: the Redis server idpool talks to becomes a replica of another', async () => {
    const { direct, key, secret } = await start();
    const issued: string[] = [];
    await waitServing(instance!, key, secret, issued);
    const other = await startRedisServer('none');
    redisServers.push(other);
    await direct.call('REPLICAOF', '127.0.0.1', String(other.port));
    await expectUnavailable(instance!, key, secret, 30);
    expect(alarmLines(instance!, 'redis_readonly').length).toBe(1); // one alarm, not 30 lines
    await direct.call('REPLICAOF', 'NO', 'ONE');
    await waitServing(instance!, key, secret, issued);
    expect(new Set(issued).size).toBe(issued.length);
    expect(instance!.output()).not.toMatch(/"msg":"internal error"/);
  }, 60_000);

  it('OOM: a Redis server at maxmemory with noeviction', async () => {
    const { direct, key, secret } = await start(['--maxmemory-policy', 'noeviction']);
    const issued: string[] = [];
    await waitServing(instance!, key, secret, issued);
    // Fill it well past its limit (4 MB of other data, then maxmemory 1 MB):
    // taking ids frees memory, so takes go on (idpool_take, allow-oom) and
    // hand out every id the pool holds, but no take brings it back under the
    // limit; the refills are refused with OOM, and once the pool is empty
    // that is the answer.
    await direct.set('filler', 'x'.repeat(4 * 1024 * 1024));
    await direct.config('SET', 'maxmemory', '1mb');
    await expect(direct.set('probe', '1')).rejects.toThrow(/^OOM/);
    const ready = await direct.llen(entityKeys(key).ids);
    const before = issued.length;
    await drainPool(instance!, key, secret, issued);
    expect(ready).toBeGreaterThan(0);
    expect(issued.length - before).toBe(ready - (ready % 5)); // takes of 5
    await expectUnavailable(instance!, key, secret, 30);
    expect(alarmLines(instance!, 'redis_oom').length).toBe(1);
    await direct.del('filler');
    await direct.config('SET', 'maxmemory', '0');
    await waitServing(instance!, key, secret, issued);
    expect(new Set(issued).size).toBe(issued.length);
    expect(instance!.output()).not.toMatch(/"msg":"internal error"/);
  }, 60_000);

  // Found by the chaos run (issue 29): a take that met a restore between
  // mysqldump's DROP TABLE and CREATE TABLE of `application` answered 500.
  it('a database mid-restore: its application table dropped and not yet re-created', async () => {
    const { key, secret } = await start();
    const issued: string[] = [];
    await waitServing(instance!, key, secret, issued);
    const sql = await createConnection(schema!.url);
    try {
      await sql.query('RENAME TABLE application TO application_restoring');
      await drainPool(instance!, key, secret, issued);
      await expectUnavailable(instance!, key, secret, 10);
      expect(alarmLines(instance!, 'database_schema').length).toBe(1);
      await sql.query('RENAME TABLE application_restoring TO application');
    } finally {
      await sql.end();
    }
    await waitServing(instance!, key, secret, issued);
    expect(new Set(issued).size).toBe(issued.length);
    expect(instance!.output()).not.toMatch(/"msg":"internal error"/);
  }, 60_000);

  it('a database that refuses connections (stopped private mariadbd)', async (ctx) => {
    if (!privateMariadbPossible()) {
      if (process.env.IDPOOL_REQUIRE_SERVICES === '1')
        throw new Error('mariadbd is needed for this test (IDPOOL_REQUIRE_SERVICES=1)');
      return ctx.skip();
    }
    mariadb = await startPrivateMariadb();
    const redis = await startRedisServer('none');
    redisServers.push(redis);
    instance = await startInstance({ IDPOOL_DATABASE_URL: mariadb.url, IDPOOL_REDIS_URL: redis.url });
    const key = uniqueKey('orders');
    const secret = await register(instance.url, {
      key,
      step: 100,
      maxPoolSize: 1000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 10,
    });
    const issued: string[] = [];
    await waitServing(instance, key, secret, issued);
    await mariadb.kill9();
    // Drain what the pool holds; then every request needs the database.
    await drainPool(instance, key, secret, issued);
    await expectUnavailable(instance, key, secret, 10);
    const admin = await call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
    expect(admin.status).toBe(503);
    expect(admin.body.error.code).toBe('unavailable');
    expect(admin.headers.get('retry-after')).toMatch(/^\d+$/);
    await mariadb.restart();
    await waitServing(instance, key, secret, issued);
    expect(new Set(issued).size).toBe(issued.length);
    expect(instance.output()).not.toMatch(/"msg":"internal error"/);
  }, 90_000);

  it('a read-only database (SET GLOBAL read_only on a private mariadbd; idpool connects without READ ONLY ADMIN)', async (ctx) => {
    if (!privateMariadbPossible()) {
      if (process.env.IDPOOL_REQUIRE_SERVICES === '1')
        throw new Error('mariadbd is needed for this test (IDPOOL_REQUIRE_SERVICES=1)');
      return ctx.skip();
    }
    mariadb = await startPrivateMariadb();
    const root = await createConnection({ uri: mariadb.url.replace(/\/idpool$/, '/') });
    try {
      await root.query('CREATE DATABASE idpool');
      await root.query("CREATE USER 'app'@'127.0.0.1'");
      await root.query("GRANT ALL ON idpool.* TO 'app'@'127.0.0.1'");
      const redis = await startRedisServer('none');
      redisServers.push(redis);
      instance = await startInstance({
        IDPOOL_DATABASE_URL: `mysql://app@127.0.0.1:${mariadb.port}/idpool`,
        IDPOOL_REDIS_URL: redis.url,
      });
      const key = uniqueKey('orders');
      const secret = await register(instance.url, {
        key,
        step: 100,
        maxPoolSize: 1000,
        maxSizePerSecond: 0,
        maxSizePerTimes: 10,
      });
      const issued: string[] = [];
      await waitServing(instance, key, secret, issued);
      await root.query('SET GLOBAL read_only = ON');
      // Drain what the pool holds; then every take needs a reservation the server refuses (ER_OPTION_PREVENTS_STATEMENT).
      await drainPool(instance, key, secret, issued);
      await expectUnavailable(instance, key, secret, 10);
      expect(alarmLines(instance, 'read_only').length).toBe(1);
      await root.query('SET GLOBAL read_only = OFF');
      await waitServing(instance, key, secret, issued);
      expect(new Set(issued).size).toBe(issued.length);
      expect(instance.output()).not.toMatch(/"msg":"internal error"/);
    } finally {
      await root.end();
    }
  }, 90_000);
});
