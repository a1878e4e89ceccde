/**
 * ioredis can end a connection for good without idpool asking (a Sentinel
 * failover detector disconnecting it while a reconnect is still asking the
 * Sentinels for the master). idpool's connection connects again after any
 * end it did not ask for, and stays closed only after closeRedis().
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, connectRedis } from '../../src/redis/connection';
import { type RedisServer, startRedisServer } from '../support/processes';
import { until } from '../support/sentinel';

describe('an idpool Redis connection ended without being asked', () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedisServer('none');
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('connects again by itself; after closeRedis it stays closed', async () => {
    const redis = await connectRedis({ kind: 'single', url: `redis://127.0.0.1:${server.port}/0` });
    await redis.set('k', 'v');
    // What ioredis does in that race: status end, every command "Connection is closed.".
    redis.disconnect();
    await until('the connection to end', async () => redis.status === 'end', 2000);
    await expect(redis.get('k')).rejects.toThrow('Connection is closed.');
    const ended = Date.now();
    await until('the connection to be ready again', async () => redis.status === 'ready', 5000);
    expect(Date.now() - ended).toBeLessThan(3000);
    expect(await redis.get('k')).toBe('v');

    await closeRedis(redis);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(redis.status).toBe('end');
  });
});
