/**
 * ioredis can end a connection for good without idpool asking (a Sentinel
 * failover detector disconnecting it while a reconnect is still asking the
 * Sentinels for the master). idpool's connection connects again after any
 * end it did not ask for, and stays closed only after closeRedis(). A
 * command in flight when a connection closes fails at once.
 */
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, connectRedis } from '../../src/redis/connection';
import { classifyRedisError } from '../../src/redis/errors';
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

  it('fails a command in flight at once when its connection closes, not after the command timeout', async () => {
    const redis = await connectRedis({ kind: 'single', url: `redis://127.0.0.1:${server.port}/0` });
    const admin = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
    try {
      // In flight for up to 5 s on the server (the command timeout, 2 s, would end it first).
      const blocked = redis.call('BLPOP', 'nothing-here', '5');
      const outcome = blocked.then(
        () => new Error('answered'),
        (err: Error) => err,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const killedAt = Date.now();
      // What a Redis restart does to it: the server closes the connection with the command unanswered.
      expect(await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')).toBeGreaterThanOrEqual(1);
      const err = await outcome;
      // ioredis drops such a command without an answer unless the queue is flushed on the close: it
      // then waited out the 2 s command timeout (a refill held its pool empty that long after a restart).
      expect(Date.now() - killedAt).toBeLessThan(500);
      expect(classifyRedisError(err), err.message).toMatchObject({ class: 'unavailable', kind: 'lost' });
      // The connection comes back by itself and serves.
      await until('the connection to be ready again', async () => redis.status === 'ready', 5000);
      expect(await redis.ping()).toBe('PONG');
    } finally {
      admin.disconnect();
      await closeRedis(redis);
    }
  });
});
