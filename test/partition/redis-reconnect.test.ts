/**
 * A Redis connection whose replies stop is dropped and re-opened by
 * idpool's own connection code (src/redis/connection.ts): the host
 * name is looked up again, so a name moved to another server (a managed
 * Redis failing over by DNS) is followed; and a command left unanswered on
 * the dropped connection is not sent again on the new one. Two redis-servers
 * on one port of two loopback addresses; a SIGSTOP freezes the first as a
 * half-open link would (the kernel still accepts, nothing answers).
 */
import dns from 'node:dns';
import { type ChildProcess, spawn } from 'node:child_process';
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisClient, closeRedis, connectRedis } from '../../src/redis/connection';
import { answers } from '../support/netns';
import { freePort } from '../support/processes';
import { until } from '../support/sentinel';

const NAME = 'redis.idpool.test';
const SOCKET_TIMEOUT_MS = 1000;

describe('a Redis connection that stops answering', () => {
  const servers: ChildProcess[] = [];
  let port: number;
  let resolvesTo = '127.0.0.2';
  const lookup = dns.lookup;

  beforeAll(async () => {
    port = await freePort();
    for (const host of ['127.0.0.2', '127.0.0.3']) {
      servers.push(
        spawn('redis-server', ['--port', String(port), '--bind', host, '--save', '', '--appendonly', 'no'], {
          stdio: 'ignore',
        }),
      );
      await answers(host, port);
    }
    // The test's own resolver for one name; everything else as usual.
    (dns as { lookup: unknown }).lookup = (host: string, options: unknown, callback: (...args: unknown[]) => void) => {
      if (host !== NAME) {
        (lookup as (...args: unknown[]) => void)(host, options, callback);
        return;
      }
      const all = typeof options === 'object' && (options as { all?: boolean }).all;
      process.nextTick(() =>
        all ? callback(null, [{ address: resolvesTo, family: 4 }]) : callback(null, resolvesTo, 4),
      );
    };
  });

  afterAll(() => {
    (dns as { lookup: unknown }).lookup = lookup;
    for (const s of servers) {
      s.kill('SIGCONT');
      s.kill('SIGKILL');
    }
  });

  it('is replaced within the socket timeout, on the address the name has now, and its unanswered command is not replayed there', async () => {
    const runId = async (r: RedisClient) => /run_id:(\w+)/.exec(await (r as Redis).info('server'))![1];
    const direct = ['127.0.0.2', '127.0.0.3'].map((host) => new Redis({ host, port }));
    const [first, second] = await Promise.all(direct.map(runId));
    const redis = await connectRedis(
      { kind: 'single', url: `redis://${NAME}:${port}/0` },
      { socketTimeoutMs: SOCKET_TIMEOUT_MS },
    );
    try {
      expect(await runId(redis)).toBe(first);
      // The name moves to the second server; the first stops answering.
      resolvesTo = '127.0.0.3';
      servers[0].kill('SIGSTOP');
      const stopped = Date.now();
      await expect(redis.incr('replayed')).rejects.toThrow();
      await until('the connection to move to the second server', async () => (await runId(redis)) === second, 10_000);
      const moved = Date.now() - stopped;
      process.stdout.write(
        `redis-reconnect: on the new address ${moved} ms after the first server stopped answering (socket timeout ${SOCKET_TIMEOUT_MS} ms)\n`,
      );
      // Socket timeout, a reconnect attempt, a command timeout at most in between; generous for a loaded machine.
      expect(moved).toBeLessThan(SOCKET_TIMEOUT_MS + 5000);
      expect(await direct[1].get('replayed')).toBeNull();
    } finally {
      await closeRedis(redis);
      for (const d of direct) d.disconnect();
    }
  }, 60_000);
});
