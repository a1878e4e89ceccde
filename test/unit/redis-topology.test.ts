import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config';
import { clusterOptions, describeRedis, redisOptions } from '../../src/redis/connection';
import { REDIS_SOCKET_TIMEOUT_MS } from '../../src/redis/topology';

const base = { IDPOOL_ADMIN_TOKEN: 'x'.repeat(32) };
const configError = (env: Record<string, string>) => {
  try {
    loadConfig({ ...base, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
};

describe('Redis topology configuration', () => {
  it('no Redis variable: the in-process pool', () => {
    expect(loadConfig(base).redis).toBeUndefined();
  });

  it('IDPOOL_REDIS_URL: one server', () => {
    expect(loadConfig({ ...base, IDPOOL_REDIS_URL: 'redis://h:6379/2' }).redis).toEqual({
      kind: 'single',
      url: 'redis://h:6379/2',
    });
  });

  it('IDPOOL_REDIS_SENTINELS: Sentinel, master name defaulting to mymaster, credentials for nodes and Sentinels', () => {
    const sentinel = loadConfig({
      ...base,
      IDPOOL_REDIS_SENTINELS: 'a:26379, 10.0.0.2:26380,[::1]:26381',
      IDPOOL_REDIS_USERNAME: 'u',
      IDPOOL_REDIS_PASSWORD: 'p',
    }).redis;
    expect(sentinel).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 'a', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      masterName: 'mymaster',
      username: 'u',
      password: 'p',
    });
    if (sentinel?.kind !== 'sentinel') throw new Error('expected a Sentinel topology');
    const options = redisOptions(sentinel);
    expect(options).toMatchObject({
      name: 'mymaster',
      role: 'master',
      sentinelPassword: 'p',
      password: 'p',
      failoverDetector: true,
      enableOfflineQueue: false,
      keepAlive: 5000,
    });
    // ioredis hands reconnectOnError the server's reply as a ReplyError.
    const reply = (message: string) => new ReplyError(message) as Error;
    expect(options.reconnectOnError!(reply("READONLY You can't write against a read only replica."))).toBe(2);
    expect(options.reconnectOnError!(reply('NOREPLICAS Not enough good replicas to write.'))).toBe(1);
    expect(options.reconnectOnError!(reply('OOM command not allowed'))).toBe(false);
    expect(
      loadConfig({ ...base, IDPOOL_REDIS_SENTINELS: 'a:1', IDPOOL_REDIS_SENTINEL_MASTER: 'orders-redis' }).redis,
    ).toMatchObject({ masterName: 'orders-redis' });
  });

  it.each([
    [{ IDPOOL_REDIS_URL: 'http://h:6379' }, /^IDPOOL_REDIS_URL: must be redis:/],
    [{ IDPOOL_REDIS_SENTINELS: 'a' }, /^IDPOOL_REDIS_SENTINELS: must be host:port/],
    [{ IDPOOL_REDIS_SENTINELS: 'a:0' }, /^IDPOOL_REDIS_SENTINELS: must be host:port/],
    [{ IDPOOL_REDIS_SENTINELS: 'a:26379,' }, /^IDPOOL_REDIS_SENTINELS: must be host:port/],
    [
      { IDPOOL_REDIS_SENTINELS: 'a:26379', IDPOOL_REDIS_SENTINEL_MASTER: 'bad name' },
      /^IDPOOL_REDIS_SENTINEL_MASTER: /,
    ],
    [
      { IDPOOL_REDIS_URL: 'redis://h', IDPOOL_REDIS_SENTINELS: 'a:1' },
      /^IDPOOL_REDIS_SENTINELS: set only one of IDPOOL_REDIS_URL, IDPOOL_REDIS_SENTINELS/,
    ],
    [
      { IDPOOL_REDIS_SENTINELS: 'a:1', IDPOOL_REDIS_CLUSTER_NODES: 'b:2' },
      /^IDPOOL_REDIS_CLUSTER_NODES: set only one of/,
    ],
  ])('%o → one line naming the variable', (env, message) => {
    const line = configError(env);
    expect(line).toMatch(message);
    expect(line).not.toContain('\n');
  });

  it('every connection (one server, Sentinel, each Cluster node) is dropped when replies stop, and never replays a command whose caller gave up', () => {
    const settings = {
      socketTimeoutMs: loadConfig({ ...base, IDPOOL_REDIS_SOCKET_TIMEOUT_MS: '1500' }).redisSocketTimeoutMs,
    };
    expect(settings.socketTimeoutMs).toBe(1500);
    expect(loadConfig(base).redisSocketTimeoutMs).toBe(REDIS_SOCKET_TIMEOUT_MS);
    const dropped = { socketTimeout: 1500, autoResendUnfulfilledCommands: false, enableOfflineQueue: false };
    expect(redisOptions({ kind: 'single', url: 'redis://h:6379/0' }, settings)).toMatchObject(dropped);
    expect(
      redisOptions({ kind: 'sentinel', sentinels: [{ host: 'a', port: 1 }], masterName: 'm' }, settings),
    ).toMatchObject({ ...dropped, sentinelCommandTimeout: 2000 });
    const cluster = clusterOptions({ kind: 'cluster', nodes: [{ host: 'a', port: 1 }] }, settings);
    expect(cluster.enableOfflineQueue).toBe(false);
    expect(cluster.redisOptions).toMatchObject(dropped);
    // A reconnect attempt at most every half second: after a heal the next one is close.
    expect(redisOptions({ kind: 'single', url: 'redis://h' }).retryStrategy!(1000)).toBe(500);
  });

  it('logs describe where Redis is without the password', () => {
    expect(describeRedis({ kind: 'single', url: 'redis://user:secret@h:6379/1' })).toBe(
      'redis redis://user:***@h:6379/1',
    );
    expect(
      describeRedis({ kind: 'sentinel', sentinels: [{ host: 'a', port: 1 }], masterName: 'm', password: 'secret' }),
    ).toBe('redis sentinel m via a:1');
  });
});
