import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { register } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';

describe('Redis maxmemory-policy check at start (docs/design.md "Redis keys")', () => {
  let redisServer: RedisServer | undefined;
  let instance: Instance | undefined;
  let dir: string | undefined;

  afterEach(async () => {
    await instance?.stop();
    await redisServer?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    instance = redisServer = dir = undefined;
  });

  const env = () => {
    dir = mkdtempSync(join(tmpdir(), 'idpool-memory-'));
    return {
      IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}`,
      IDPOOL_REDIS_URL: redisServer!.url,
      IDPOOL_WORKER_ID: '1',
      IDPOOL_WORKER_ID_UNSAFE: '1',
    };
  };

  it.each([
    { name: 'allkeys-lru', args: ['--maxmemory-policy', 'allkeys-lru'] },
    // CONFIG renamed away, as some managed services do: read from INFO memory instead.
    {
      name: 'allkeys-random, CONFIG disabled',
      args: ['--maxmemory-policy', 'allkeys-random', '--rename-command', 'CONFIG', '""'],
    },
  ])('refuses $name: exit code 2 and one line naming the setting', async ({ args }) => {
    redisServer = await startRedisServer('none', args);
    const failure = await startInstance(env()).then(
      (i) => {
        instance = i;
        return '';
      },
      (err: Error) => err.message,
    );
    expect(failure).toMatch(/exited with 2 before listening/);
    expect(failure).toMatch(
      /^idpool: invalid configuration: Redis maxmemory-policy: is allkeys-(lru|random): .*noeviction/m,
    );
  });

  it.each(['noeviction', 'volatile-lru'])('starts with %s', async (policy) => {
    redisServer = await startRedisServer('none', ['--maxmemory-policy', policy]);
    instance = await startInstance(env());
    expect(instance.output()).not.toMatch(/redis_maxmemory_low/);
  });

  it('warns at start when maxmemory is below what full pools could take', async () => {
    redisServer = await startRedisServer('none', ['--maxmemory-policy', 'noeviction', '--maxmemory', '20mb']);
    const e = env();
    instance = await startInstance(e);
    // 5,000,000 ids × ~10 B ≈ 50 MB > 20 MB.
    await register(instance.url, {
      key: uniqueKey('big'),
      step: 100_000,
      maxPoolSize: 5_000_000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 1000,
    });
    await instance.stop();
    instance = await startInstance(e);
    const line = instance
      .output()
      .split('\n')
      .find((l) => l.includes('"alarm":"redis_maxmemory_low"'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ maxmemory: 20 * 1024 * 1024, poolCeilingIds: 5_000_000, bytesPerId: 10 });
  });
});
