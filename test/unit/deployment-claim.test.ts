import { describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/redis/connection';
import { claimRedisKeys } from '../../src/redis/deployment-claim';

/** The two commands the claim sends, over one stored value (SET NX as Redis answers it). */
function redisHolding(value: string | null) {
  const calls = { set: 0 };
  const redis = {
    async set(_key: string, v: string) {
      calls.set++;
      if (value !== null) return null;
      value = v;
      return 'OK';
    },
    get: async () => value,
  };
  return { redis: redis as unknown as RedisClient, calls };
}

const ours = { id: 'dep-1', database: 'mysql://db/idpool' };

describe('claimRedisKeys', () => {
  it('claims free keys, and passes its own record', async () => {
    const free = redisHolding(null);
    await claimRedisKeys(free.redis, 'idpool', ours);
    await expect(claimRedisKeys(free.redis, 'idpool', ours)).resolves.toBeUndefined();
  });

  it('refuses another deployment, naming it', async () => {
    const taken = redisHolding(JSON.stringify({ id: 'dep-2', database: 'mysql://other/idpool' }));
    await expect(claimRedisKeys(taken.redis, 'idpool', ours)).rejects.toThrow(
      /deployment dep-2 \(database mysql:\/\/other/,
    );
  });

  it.each(['', 'null', '5', 'not json'])(
    'a value written by hand (%j) is refused once, never claimed again in a loop',
    async (value) => {
      const odd = redisHolding(value);
      await expect(claimRedisKeys(odd.redis, 'idpool', ours)).rejects.toThrow(/database unknown/);
      expect(odd.calls.set).toBe(1);
    },
  );
});
