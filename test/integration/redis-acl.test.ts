import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis, { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EntityKeys, entityKeys, fleetKeys, numberKeys } from '../../src/redis/keys';
import { RedisNumberStore } from '../../src/pool/number-store';
import { NumberScheme } from '../../src/numbers/scheme';
import type { Period } from '../../src/numbers/period';
import { RedisPoolStore } from '../../src/pool/redis-pool-store';
import { loadFunctions, OWN_LIBRARY, PUBLIC_LIBRARY, registeredName } from '../../src/redis/functions';
import { idpool, json } from '../support/cli';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { type RedisClusterTopology, startRedisCluster } from '../support/redis-cluster';
import { until } from '../support/sentinel';
import { createTestSchema } from '../support/services';
import { waitFor } from '../support/wait';
import { describeWithServices } from '../support/describe-with-services';

/** What `idpool redis-acl … --json` prints. */
interface PrintedAcl {
  user: string;
  password: string;
  setuser: string;
  usersAcl: string;
}

/** Feeds `input` to `redis-cli -p port`, one command a line, as an operator pipes the printed ACL SETUSER line. */
function redisCli(port: number, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn('redis-cli', ['-p', String(port)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += String(d)));
    proc.stderr.on('data', (d) => (out += String(d)));
    proc.once('error', reject);
    proc.once('close', () => resolve(out.trim()));
    proc.stdin.end(input);
  });
}

async function printedAcl(args: string[]): Promise<PrintedAcl> {
  return json(await idpool(['redis-acl', ...args, '--json'])) as PrintedAcl;
}

/** The entries of ACL LOG for `user`, each as a field → value record. */
async function aclLog(admin: Redis, user: string): Promise<Record<string, string>[]> {
  const entries = (await admin.call('ACL', 'LOG')) as unknown[][];
  return entries
    .map((e) => {
      const record: Record<string, string> = {};
      for (let i = 0; i < e.length; i += 2) record[String(e[i])] = String(e[i + 1]);
      return record;
    })
    .filter((r) => r.username === user);
}

/**
 * Refusals the service expects and gets past: CONFIG GET, which the memory
 * check replaces with INFO memory when refused (it would read passwords);
 * CLIENT SETINFO, which ioredis sends on connect and ignores when refused
 * (Redis 7.0 has no such subcommand to allow).
 */
const EXPECTED_REFUSALS = new Set(['config|get', 'client|setinfo']);

/** Commands refused to the service's user, but those it expects. */
async function deniedForService(admin: Redis, user: string): Promise<string[]> {
  return (await aclLog(admin, user))
    .filter((r) => !EXPECTED_REFUSALS.has(r.object))
    .map((r) => `${r.reason} ${r.object} (${r.context})`);
}

/** `ACL DRYRUN user …`: OK, or the reason the user may not run it. */
async function dryRun(admin: Redis, user: string, ...command: (string | number)[]): Promise<string> {
  return String(await admin.call('ACL', 'DRYRUN', user, ...command));
}

/**
 * `FCALL idpool_push_open` of one entity (function, key count, its six keys,
 * then a one-id segment `id`..`id`): the first step of a push, which only the
 * service may run (src/redis/commands/push_open-6.lua).
 */
const pushOpen = (k: EntityKeys, id = '1') =>
  [registeredName('idpool_push_open'), 6, k.ids, k.fence, k.epoch, k.pushed, k.pushing, k.pushOpen, id, id, 1] as const;

const NOPERM = /^NOPERM/;

/** The Redis server's clock, Unix ms: the clock that decides a business number's period. */
async function redisNow(redis: Redis): Promise<number> {
  const [seconds, micros] = (await redis.time()).map(Number);
  return seconds * 1000 + Math.floor(micros / 1000);
}

/** Runs `command` and returns the error message it was refused with. */
async function refusal(run: () => Promise<unknown>): Promise<string> {
  try {
    const result = await run();
    return `not refused: ${JSON.stringify(result)}`;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * A direct consumer of one entity with the user `idpool redis-acl <key>`
 * prints (docs/design.md "Least privilege"), on a private redis-server:
 * the guarded pop and LPOP of its own pool work; pushing, resetting, any
 * other entity and every server-wide command are refused by Redis itself.
 */
describe('idpool redis-acl <key>: a direct consumer pops its own pool and nothing else', () => {
  let redis: RedisServer;
  let admin: Redis;
  let consumer: Redis;
  const own = entityKeys('orders');
  const other = entityKeys('payments');
  const ids = Array.from({ length: 10 }, (_, i) => String(1001 + i));

  beforeAll(async () => {
    // DEBUG enabled, so that it is the ACL that refuses it.
    redis = await startRedisServer('none', ['--enable-debug-command', 'yes']);
    admin = new Redis(redis.url);
    await loadFunctions(admin);
    const store = new RedisPoolStore(admin);
    for (const key of ['orders', 'payments']) {
      await store.reset(key, 1000n);
      expect(await store.push(key, ids, 1001n, 1010n)).toEqual({ kind: 'ok', size: 10 });
    }
  });

  afterAll(async () => {
    consumer?.disconnect();
    admin?.disconnect();
    await redis?.stop();
  });

  it('prints ACL SETUSER and users.acl lines that hold only the hash of a fresh password', async () => {
    const run = await idpool(['redis-acl', 'orders']);
    expect(run.code, run.stderr).toBe(0);
    const password = /^# password: (\S+)$/m.exec(run.stdout)?.[1];
    expect(password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const hash = createHash('sha256').update(password!).digest('hex');
    const setuser = run.stdout.split('\n').find((l) => l.startsWith('ACL SETUSER'))!;
    const fileLine = run.stdout.split('\n').find((l) => l.startsWith('user '))!;
    // -@all before any grant; the entity's pool list and epoch key, nothing else.
    expect(setuser).toBe(
      `ACL SETUSER idpool-pop-orders reset on "#${hash}" -@all resetchannels "+fcall|idpool_pop" +lpop +llen +get "+info|server" "+info|replication" +ping "~${own.ids}" "~${own.epoch}"`,
    );
    expect(fileLine).toBe(
      `user idpool-pop-orders on #${hash} -@all resetchannels +fcall|idpool_pop +lpop +llen +get +info|server +info|replication +ping ~${own.ids} ~${own.epoch}`,
    );
    expect(
      run.stdout
        .split('\n')
        .filter((l) => l.includes(password!))
        .every((l) => l.startsWith('#')),
    ).toBe(true);
    // Each run makes a new password.
    expect((await printedAcl(['orders'])).password).not.toBe(password);

    // Piped into redis-cli as printed; the consumer connects with it.
    expect(await redisCli(redis.port, `${setuser}\n`)).toBe('OK');
    // ioredis's ready check runs a plain INFO, which this user may not: consumers turn it off.
    consumer = new Redis({
      host: '127.0.0.1',
      port: redis.port,
      username: 'idpool-pop-orders',
      password,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
    });
    expect(await consumer.ping()).toBe('PONG');
  });

  it('pops with FCALL idpool_pop and LPOP; push, reset, take, RPUSH, another entity, FLUSHALL and CONFIG are refused', async () => {
    expect(await consumer.fcall('idpool_pop', 2, own.ids, own.epoch, 3)).toEqual(['1001', '1002', '1003']);
    expect(await consumer.lpop(own.ids)).toBe('1004');
    expect(await consumer.call('FCALL', 'idpool_pop', 2, own.ids, own.epoch, 100)).toEqual([]);

    const refused: Record<string, () => Promise<unknown>> = {
      'FCALL idpool_push_open': () => consumer.fcall(...pushOpen(own)),
      'FCALL idpool_push_close': () =>
        consumer.fcall(registeredName('idpool_push_close'), 3, own.ids, own.pushing, own.pushOpen),
      MULTI: () => consumer.call('MULTI'),
      RENAME: () => consumer.rename(own.ids, own.epoch),
      'FCALL idpool_reset': () =>
        consumer.fcall(registeredName('idpool_reset'), 4, own.ids, own.fence, own.epoch, own.pushed, ''),
      'FCALL idpool_take': () =>
        consumer.fcall(registeredName('idpool_take'), 3, own.ids, own.epoch, own.ratePrefix, 1, 0),
      'FCALL idpool_take_open': () =>
        consumer.fcall(registeredName('idpool_take_open'), 4, own.ids, own.epoch, own.ratePrefix, own.taking, 1, 0),
      'FCALL idpool_take_close': () => consumer.fcall(registeredName('idpool_take_close'), 2, own.taking, own.ids),
      'FCALL idpool_unlock_stale': () => consumer.fcall(registeredName('idpool_unlock_stale'), 2, own.lock, own.epoch),
      'FCALL idpool_pop of another entity': () => consumer.fcall('idpool_pop', 2, other.ids, other.epoch, 1),
      'LPOP of another entity': () => consumer.lpop(other.ids),
      RPUSH: () => consumer.rpush(own.ids, '1'),
      LPUSH: () => consumer.lpush(own.ids, '99999'),
      'SET epoch': () => consumer.set(own.epoch, 'x'),
      'SET fence': () => consumer.set(own.fence, '1'),
      DEL: () => consumer.del(own.ids),
      FLUSHALL: () => consumer.flushall(),
      FLUSHDB: () => consumer.flushdb(),
      'CONFIG GET': () => consumer.config('GET', 'requirepass'),
      'CONFIG SET': () => consumer.config('SET', 'maxmemory-policy', 'allkeys-lru'),
      KEYS: () => consumer.keys('*'),
      SCAN: () => consumer.scan(0),
      'INFO (all)': () => consumer.info(),
      EVAL: () => consumer.eval("return redis.call('RPUSH', KEYS[1], '1')", 1, own.ids),
      'FUNCTION DELETE': () => consumer.call('FUNCTION', 'DELETE', 'idpool'),
      'FUNCTION LOAD': () =>
        consumer.call(
          'FUNCTION',
          'LOAD',
          'REPLACE',
          "#!lua name=idpool\nredis.register_function('idpool_pop', function() return 1 end)",
        ),
      'ACL SETUSER': () => consumer.call('ACL', 'SETUSER', 'idpool-pop-orders', '+@all', '~*'),
      DEBUG: () => consumer.call('DEBUG', 'SLEEP', '0'),
      SHUTDOWN: () => consumer.call('SHUTDOWN', 'NOSAVE'),
    };
    const results = Object.fromEntries(
      await Promise.all(Object.entries(refused).map(async ([name, run]) => [name, await refusal(run)] as const)),
    );
    for (const [name, message] of Object.entries(results)) expect(message, name).toMatch(NOPERM);

    // Nothing changed: the pool lost only what was popped, fences, epochs and the other entity are as they were.
    expect(await admin.lrange(own.ids, 0, -1)).toEqual(ids.slice(4));
    expect(await admin.lrange(other.ids, 0, -1)).toEqual(ids);
    expect(await admin.get(own.fence)).toBe('1010');
    expect(await admin.get(own.epoch)).toBe(await admin.get(other.epoch));
    // This release's library and the public one: no other.
    const libraries = (await admin.call('FUNCTION', 'LIST')) as unknown[][];
    expect(libraries.map((library) => library[1]).sort()).toEqual([OWN_LIBRARY, PUBLIC_LIBRARY].sort());
  });

  it('ACL DRYRUN agrees, and names the key: FCALL of any function may not touch the fence', async () => {
    const user = 'idpool-pop-orders';
    expect(await dryRun(admin, user, 'FCALL', 'idpool_pop', 2, own.ids, own.epoch, 1)).toBe('OK');
    expect(await dryRun(admin, user, 'LPOP', own.ids)).toBe('OK');
    expect(await dryRun(admin, user, 'FCALL', ...pushOpen(own))).toMatch(/no permissions to run the 'fcall' command/);
    expect(await dryRun(admin, user, 'LPOP', other.ids)).toMatch(/no permissions to access the '.*payments.*' key/);
    expect(await dryRun(admin, user, 'FLUSHALL')).toMatch(/no permissions to run the 'flushall' command/);
    expect(await dryRun(admin, user, 'CONFIG', 'SET', 'maxmemory', '1')).toMatch(
      /no permissions to run the 'config\|set' command/,
    );

    // Even a user allowed to FCALL every function cannot push or reset: Redis
    // checks the keys each function is given against the caller's ACL.
    await admin.call('ACL', 'SETUSER', user, '+fcall');
    try {
      expect(await dryRun(admin, user, 'FCALL', ...pushOpen(own))).toMatch(
        /no permissions to access the '.*:fence' key/,
      );
      expect(
        await dryRun(
          admin,
          user,
          'FCALL',
          registeredName('idpool_reset'),
          4,
          own.ids,
          own.fence,
          own.epoch,
          own.pushed,
          '',
        ),
      ).toMatch(/no permissions to access the '.*:fence' key/);
      const push = await refusal(() => consumer.fcall(...pushOpen(own, '99999')));
      expect(push).toMatch(/^NOPERM.*keys/);
      expect(
        await refusal(() =>
          consumer.fcall(registeredName('idpool_reset'), 4, own.ids, own.fence, own.epoch, own.pushed, ''),
        ),
      ).toMatch(/^NOPERM.*keys/);
      expect(await admin.lrange(own.ids, 0, -1)).toEqual(ids.slice(4));
    } finally {
      await admin.call('ACL', 'SETUSER', user, '-fcall', '+fcall|idpool_pop');
    }
  });

  it("a business-number entity: its consumer pops formatted numbers of now's period with FCALL idpool_pop, never the next period's", async () => {
    const key = 'receipts';
    const numbers = new RedisNumberStore(admin, 'idpool');
    const scheme = NumberScheme.of(
      NumberScheme.settings({ format: 'INV{yyyy}{MM}{dd}-{seq:6}', timeZone: 'Asia/Shanghai' }),
    );
    await numbers.state(key, []);
    // Now's period by the Redis clock (once more if a boundary fell between reading the clock and the push).
    let period = scheme.calendar.at(await redisNow(admin));
    const formatted = (p: Period, from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => scheme.template.formatter(p)(from + i));
    let result = await numbers.push(key, period, formatted(period, 1, 5), 1n, 5n, false);
    if (result === 'period_over') {
      period = scheme.calendar.at(await redisNow(admin));
      result = await numbers.push(key, period, formatted(period, 1, 5), 1n, 5n, false);
    }
    expect(result).toBe('ok');
    const next = scheme.calendar.after(period)!;
    expect(await numbers.push(key, next, formatted(next, 1, 3), 1n, 3n, false)).toBe('ok');

    const printed = await printedAcl([key]);
    expect(await redisCli(redis.port, `${printed.setuser}\n`)).toBe('OK');
    const receipts = new Redis({
      host: '127.0.0.1',
      port: redis.port,
      username: `idpool-pop-${key}`,
      password: printed.password,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
    });
    const k = numberKeys(key);
    try {
      const today = formatted(period, 1, 5);
      expect(await receipts.fcall('idpool_pop', 2, k.ids, k.epoch, 2)).toEqual(today.slice(0, 2));
      expect(await receipts.lpop(k.ids)).toBe(today[2]);
      // The list ends with its period by the Redis clock (Redis expires a key once its clock is past the time).
      expect(await admin.call('PEXPIRETIME', k.ids)).toBe(period.end - 1);
      // Two left of now's period: a pop of three takes nothing, and the next period's numbers are never popped early.
      expect(await receipts.fcall('idpool_pop', 2, k.ids, k.epoch, 3)).toEqual([]);
      expect(await receipts.fcall('idpool_pop', 2, k.ids, k.epoch, 2)).toEqual(today.slice(3));
      expect(await receipts.fcall('idpool_pop', 2, k.ids, k.epoch, 1)).toEqual([]);
      // The staged numbers, the period table and the fences are not the consumer's.
      expect(await admin.lrange(k.staged, 0, -1)).toEqual(formatted(next, 1, 3));
      expect(await refusal(() => receipts.lpop(k.staged))).toMatch(NOPERM);
      expect(await refusal(() => receipts.hset(k.periods, 'latest', '0'))).toMatch(NOPERM);
      expect(await refusal(() => receipts.hset(k.fence, period.id, '0'))).toMatch(NOPERM);
    } finally {
      receipts.disconnect();
    }
  });

  it('refuses a bad key, a bad user name, and a key together with --service', async () => {
    const bad = await idpool(['redis-acl', 'orders;flushall']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^idpool: entity key must be 1-64 of A-Z a-z 0-9 _ - ., got "orders;flushall"\n$/);
    expect((await idpool(['redis-acl', 'orders', '--user', 'a b'])).stderr).toMatch(/--user must be/);
    expect((await idpool(['redis-acl', 'orders', '--service'])).stderr).toMatch(/either an entity key or --service/);
    expect((await idpool(['redis-acl'])).code).toBe(2);
    expect((await idpool(['redis-acl', '--service', '--prefix', 'a{b}'])).stderr).toMatch(/--prefix must be/);
  });

  it('--prefix (or IDPOOL_REDIS_KEY_PREFIX) names the keys of a deployment under its own prefix', async () => {
    const service = await printedAcl(['--service', '--prefix', 'staging']);
    expect(service.setuser).toContain('"~staging:*"');
    expect(service.setuser).not.toContain('idpool:*');
    const consumer = await printedAcl(['orders', '--prefix', 'staging']);
    expect(consumer.setuser).toContain('"~staging:{orders}:ids"');
  });
});

/** Takes `count` ids, waiting out 503s (Redis coming back, a failover) for up to 30 s; fails on any other answer. */
async function takeServed(url: string, key: string, secret: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 30_000;
  let res = await takeIds(url, key, secret, count);
  while (res.status === 503 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    res = await takeIds(url, key, secret, count);
  }
  expect(res.status, `${key}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body.ids;
}

/** Ids of one entity, as handed out over HTTP or popped directly, for "never twice, always increasing" checks. */
class Issued {
  readonly all: bigint[] = [];
  add(list: (string | bigint)[]): void {
    for (const id of list) {
      const n = BigInt(id);
      const last = this.all.at(-1);
      if (last !== undefined && n <= last) throw new Error(`id ${n} after ${last}`);
      this.all.push(n);
    }
  }
}

/**
 * The service as the user `idpool redis-acl --service` prints, on a private
 * redis-server that loads it from its users.acl file (so it is there again
 * after a restart), with MariaDB: every path the service takes runs with no
 * command refused (ACL LOG), a restart of Redis (new epoch) is survived, and
 * the commands it must never have are refused.
 */
describeWithServices('idpool redis-acl --service: the service runs as its own ACL user', { mysql: true }, () => {
  let redis: RedisServer | undefined;
  let admin: Redis | undefined;
  let instance: Instance | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  let dir: string | undefined;
  let service: PrintedAcl;
  let consumer: PrintedAcl;

  beforeAll(async () => {
    [service, consumer] = await Promise.all([printedAcl(['--service']), printedAcl(['orders'])]);
    dir = mkdtempSync(join(tmpdir(), 'idpool-acl-'));
    const aclFile = join(dir, 'users.acl');
    // The default user stays for the test's own inspection; idpool never uses it.
    writeFileSync(aclFile, ['user default on nopass ~* &* +@all', service.usersAcl, consumer.usersAcl, ''].join('\n'));
    [redis, schema] = await Promise.all([
      startRedisServer('aof', ['--aclfile', aclFile, '--enable-debug-command', 'yes']),
      createTestSchema(),
    ]);
    admin = new Redis(redis.url);
    instance = await startInstance({
      IDPOOL_DATABASE_URL: schema.url,
      IDPOOL_REDIS_URL: `redis://${service.user}:${service.password}@127.0.0.1:${redis.port}/0`,
    });
  });

  afterAll(async () => {
    await instance?.stop();
    admin?.disconnect();
    await redis?.stop();
    await schema?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('registers, takes, refills, replays, pops directly, and survives a Redis restart, with no command refused', async () => {
    const url = instance!.url;
    const orders = await register(url, {
      key: 'orders',
      step: 100,
      maxPoolSize: 500,
      maxSizePerSecond: 0,
      maxSizePerTimes: 100,
    });
    const tokens = await register(url, {
      key: 'tokens',
      mode: 'trend',
      step: 100,
      maxPoolSize: 500,
      maxSizePerSecond: 100_000,
      maxSizePerTimes: 100,
    });
    const events = await register(url, { key: 'events', mode: 'snowflake', maxSizePerSecond: 10_000 });
    const receipts = await register(url, {
      key: 'receipts',
      format: 'R{yyyy}{MM}{dd}-{seq:8}',
      step: 100,
      maxPoolSize: 500,
      maxSizePerSecond: 0,
      maxSizePerTimes: 100,
    });
    const issued = new Issued();
    const trend = new Set<string>();
    const numbers = new Set<string>();

    /** Takes `rounds` batches of orders (ten times its pool: refills) and of the others. */
    const takeAll = async (rounds: number) => {
      for (let n = 0; n < rounds; n++) {
        issued.add(await takeServed(url, 'orders', orders, 50));
        for (const id of await takeServed(url, 'tokens', tokens, 20)) {
          expect(trend.has(id), `trend id ${id} twice`).toBe(false);
          trend.add(id);
        }
        expect(await takeServed(url, 'events', events, 10)).toHaveLength(10);
        for (const number of await takeServed(url, 'receipts', receipts, 20)) {
          expect(numbers.has(number), `business number ${number} twice`).toBe(false);
          numbers.add(number);
        }
      }
    };
    await takeAll(100);

    // Idempotent takes: stored and replayed through Redis.
    const first = await call(`${url}/apps/orders/ids`, {
      token: orders,
      body: { count: 5 },
      headers: { 'idempotency-key': 'acl-test-1' },
    });
    const again = await call(`${url}/apps/orders/ids`, {
      token: orders,
      body: { count: 5 },
      headers: { 'idempotency-key': 'acl-test-1' },
    });
    expect(first.status).toBe(200);
    expect(again.body.ids).toEqual(first.body.ids);
    issued.add(first.body.ids);

    // The consumer from the same users.acl file pops the next ids of the same line.
    const direct = new Redis({
      host: '127.0.0.1',
      port: redis!.port,
      username: consumer.user,
      password: consumer.password,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
    });
    try {
      const k = entityKeys('orders');
      issued.add((await direct.fcall('idpool_pop', 2, k.ids, k.epoch, 5)) as string[]);
      issued.add([(await direct.lpop(k.ids))!]);
    } finally {
      direct.disconnect();
    }

    expect((await call(`${url}/admin/apps`, { token: ADMIN_TOKEN })).status).toBe(200);
    expect((await call(`${url}/readyz`)).status).toBe(200);
    expect((await call(`${url}/metrics`)).status).toBe(200);
    expect(await deniedForService(admin!, service.user)).toEqual([]);

    // kill -9 and restart: a new run_id, so a new epoch for every pool.
    const epochBefore = await admin!.get(entityKeys('orders').epoch);
    await redis!.kill9();
    await redis!.restart();
    await takeAll(30);
    const epochAfter = await admin!.get(entityKeys('orders').epoch);
    expect(epochAfter).not.toBeNull();
    expect(epochAfter).not.toBe(epochBefore);
    expect(await deniedForService(admin!, service.user)).toEqual([]);
    expect(instance!.output()).not.toMatch(/NOPERM/);
    expect(issued.all.length).toBe(130 * 50 + 5 + 6);

    // The fleet, as this user: the Redis restart's alarm is in the stream and read back, the heartbeat listed.
    const fleet = fleetKeys();
    // Raised while Redis was away, redis_epoch_changed reaches the stream with a heartbeat after it is back.
    const ops = await waitFor(async () => {
      const r = await call(`${url}/admin/ops`, { token: ADMIN_TOKEN });
      return r.body.alarms.recent.some((a: { name: string }) => a.name === 'redis_epoch_changed') && r;
    });
    expect(ops.body.alarms.scope).toBe('fleet');
    expect(await admin!.xlen(fleet.alarms)).toBeGreaterThan(0);
    const instances = await call(`${url}/admin/instances`, { token: ADMIN_TOKEN });
    expect(instances.body).toMatchObject({ source: 'redis', alive: 1 });
    expect(Object.keys(await admin!.hgetall(fleet.instances))).toHaveLength(1);
    expect(await deniedForService(admin!, service.user)).toEqual([]);
  });

  it('is refused FLUSHALL, FLUSHDB, CONFIG, DEBUG, SHUTDOWN, KEYS and keys outside idpool:*', async () => {
    const as = new Redis({
      host: '127.0.0.1',
      port: redis!.port,
      username: service.user,
      password: service.password,
      maxRetriesPerRequest: 0,
    });
    try {
      expect(await as.ping()).toBe('PONG');
      const refused: Record<string, () => Promise<unknown>> = {
        FLUSHALL: () => as.flushall(),
        FLUSHDB: () => as.flushdb(),
        'CONFIG SET': () => as.config('SET', 'maxmemory-policy', 'allkeys-lru'),
        'CONFIG GET': () => as.config('GET', 'requirepass'),
        'CONFIG REWRITE': () => as.call('CONFIG', 'REWRITE'),
        DEBUG: () => as.call('DEBUG', 'SLEEP', '0'),
        SHUTDOWN: () => as.call('SHUTDOWN', 'NOSAVE'),
        KEYS: () => as.keys('*'),
        'SET outside idpool:*': () => as.set('another-app:key', '1'),
        'GET outside idpool:*': () => as.get('another-app:key'),
        'FUNCTION FLUSH': () => as.call('FUNCTION', 'FLUSH'),
        'ACL SETUSER': () => as.call('ACL', 'SETUSER', service.user, '+@all'),
        REPLICAOF: () => as.call('REPLICAOF', '127.0.0.1', '1'),
        MONITOR: () => as.call('MONITOR'),
        'CLIENT KILL': () => as.call('CLIENT', 'KILL', 'TYPE', 'normal'),
        SAVE: () => as.call('SAVE'),
      };
      for (const [name, run] of Object.entries(refused)) expect(await refusal(run), name).toMatch(NOPERM);
      for (const command of [
        ['FLUSHALL'],
        ['CONFIG', 'SET', 'maxmemory', '1'],
        ['DEBUG', 'SLEEP', '0'],
        ['KEYS', '*'],
      ]) {
        expect(await dryRun(admin!, service.user, ...command), command.join(' ')).toMatch(/no permissions/);
      }
      expect(
        await dryRun(
          admin!,
          service.user,
          'FCALL',
          registeredName('idpool_take'),
          3,
          'idpool:{x}:ids',
          'idpool:{x}:server',
          'idpool:{x}:rate:',
          1,
          0,
        ),
      ).toBe('OK');
      expect(
        await dryRun(
          admin!,
          service.user,
          'FCALL',
          registeredName('idpool_take_open'),
          4,
          'idpool:{x}:ids',
          'idpool:{x}:server',
          'idpool:{x}:rate:',
          'idpool:{x}:taking',
          1,
          0,
        ),
      ).toBe('OK');
      expect(await dryRun(admin!, service.user, 'LPOP', 'idpool:{x}:taking', 1)).toBe('OK');
      // The fleet's stream and heartbeats under the prefix; the same commands elsewhere are refused.
      const fleet = fleetKeys();
      for (const command of [
        ['XADD', fleet.alarms, 'MAXLEN', '~', '1000', '*', 'instance', 'a', 'record', '{}'],
        ['XREVRANGE', fleet.alarms, '+', '-', 'COUNT', '100'],
        ['HSET', fleet.instances, 'a', '{}'],
        ['HGETALL', fleet.instances],
        ['HDEL', fleet.instances, 'a'],
      ])
        expect(await dryRun(admin!, service.user, ...command), command.join(' ')).toBe('OK');
      expect(await dryRun(admin!, service.user, 'XADD', 'another-app:s', '*', 'a', 'b')).toMatch(/no permissions/);
      expect(await dryRun(admin!, service.user, 'XREAD', 'STREAMS', fleet.alarms, '0')).toMatch(/no permissions/);
      // The service is still serving: none of the above reached Redis.
      expect(await admin!.dbsize()).toBeGreaterThan(0);
    } finally {
      as.disconnect();
    }
  });
});

/**
 * Redis Cluster: the service and consumer users set on every node (ACL users
 * are not replicated), the service on the Cluster as its user, a consumer
 * through a cluster client, and a kill -9 of the master of the consumer's
 * entity: the promoted replica knows both users.
 */
describeWithServices(
  'idpool redis-acl on a Redis Cluster: users on every node, the service as its user',
  { mysql: true },
  () => {
    let cluster: RedisClusterTopology | undefined;
    let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
    let instance: Instance | undefined;

    beforeAll(async () => {
      [cluster, schema] = await Promise.all([startRedisCluster(), createTestSchema()]);
    });

    afterAll(async () => {
      await instance?.stop();
      await cluster?.stop();
      await schema?.drop();
    });

    it('serves, pops directly and survives a master kill -9 with only the printed users', async () => {
      const [service, consumer] = await Promise.all([printedAcl(['--service']), printedAcl(['orders', '--cluster'])]);
      expect(consumer.setuser).toContain('"+cluster|slots"');
      for (const node of cluster!.nodes)
        expect(await redisCli(node.port, `${service.setuser}\n${consumer.setuser}\n`), `node ${node.port}`).toBe(
          'OK\nOK',
        );

      instance = await startInstance({
        IDPOOL_DATABASE_URL: schema!.url,
        IDPOOL_REDIS_CLUSTER_NODES: cluster!.seedsEnv,
        IDPOOL_REDIS_USERNAME: service.user,
        IDPOOL_REDIS_PASSWORD: service.password,
      });
      const url = instance.url;
      // Six entities: their slots spread over the three masters.
      const keys = ['orders', 'payments', 'users', 'invoices', 'shipments', 'refunds'];
      const secrets = new Map<string, string>();
      for (const key of keys)
        secrets.set(
          key,
          await register(url, { key, step: 100, maxPoolSize: 500, maxSizePerSecond: 0, maxSizePerTimes: 100 }),
        );
      const issued = new Map(keys.map((k) => [k, new Issued()]));
      const takeEach = async (rounds: number) => {
        for (let n = 0; n < rounds; n++) {
          for (const key of keys) issued.get(key)!.add(await takeServed(url, key, secrets.get(key)!, 50));
        }
      };
      await takeEach(12);

      const k = entityKeys('orders');
      const popDirectly = async (seeds: number[]) => {
        const direct = new Cluster(
          seeds.map((port) => ({ host: '127.0.0.1', port })),
          {
            redisOptions: {
              username: consumer.user,
              password: consumer.password,
              enableReadyCheck: false,
              maxRetriesPerRequest: 0,
            },
          },
        );
        direct.on('error', () => undefined);
        try {
          let popped: string[] = [];
          await until(
            'a direct pop of orders',
            async () => {
              popped = (await direct.fcall('idpool_pop', 2, k.ids, k.epoch, 3)) as string[];
              return popped.length === 3;
            },
            30_000,
          );
          issued.get('orders')!.add(popped);
          expect(await refusal(() => direct.rpush(k.ids, '1'))).toMatch(NOPERM);
          expect(await refusal(() => direct.fcall(...pushOpen(k)))).toMatch(NOPERM);
          expect(await refusal(() => direct.lpop(entityKeys('payments').ids))).toMatch(NOPERM);
          for (const node of direct.nodes('master')) expect(await refusal(() => node.flushall())).toMatch(NOPERM);
        } finally {
          direct.disconnect();
        }
      };
      await popDirectly(cluster!.nodes.map((n) => n.port));

      // kill -9 the master of orders: its replica, promoted, has the same users.
      const slot = Number(await cluster!.client(cluster!.nodes[0].port).call('CLUSTER', 'KEYSLOT', k.ids));
      const master = await cluster!.ownerOf(slot);
      await cluster!.kill9(master);
      await until('a new master for the slot of orders', async () => (await cluster!.ownerOf(slot)) !== master, 30_000);
      await cluster!.waitHealthy();
      await takeEach(6);
      await popDirectly(cluster!.nodes.map((n) => n.port).filter((port) => port !== master));

      for (const node of cluster!.nodes.filter((n) => n.port !== master)) {
        expect(await deniedForService(cluster!.client(node.port), service.user), `node ${node.port}`).toEqual([]);
      }
      expect(instance.output()).not.toMatch(/NOPERM/);
    }, 240_000);
  },
);
