import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RpushIds } from '../../src/pool/redis-pool-store';
import { IdStride } from '../../src/segment/stride';

// A push writes its RPUSH by hand (RedisPoolStore.push): the bytes must be
// exactly what ioredis writes for `rpush(key, ...ids)`.
describe('RpushIds', () => {
  const ioredisBytes = (key: string, ids: string[]) => {
    const writable = new Command('rpush', [key, ...ids]).toWritable(undefined as never);
    return typeof writable === 'string' ? Buffer.from(writable, 'utf8') : writable;
  };
  const same = (key: string, ids: string[]) => expect(new RpushIds(key, ids).toWritable().equals(ioredisBytes(key, ids))).toBe(true);

  it("writes the bytes ioredis writes, for ids of 1 to 20 digits and every entity key's form", () => {
    same('idpool:{orders}:pushing', ['1']);
    same('idpool:{orders}:pushing', ['7', '12', '999999999', '1000000000', '9007199254740993', '18446744073709551615']);
    same('custom-prefix:{a.b_c-9}:pushing', new IdStride(3, 2).idStrings(10n, 10_010n));
    same('idpool:{orders}:pushing', new IdStride(1, 0).idStrings(9_007_199_254_730_000n, 9_007_199_254_750_000n));
  });

  it('is an RPUSH of its key, so a Cluster pipeline finds its slot', () => {
    const command = new RpushIds('idpool:{orders}:pushing', ['1', '2']);
    expect(command.name).toBe('rpush');
    expect(command.getKeys()).toEqual(['idpool:{orders}:pushing']);
    expect(command.getSlot()).toBe(new Command('rpush', ['idpool:{orders}:ids', '1']).getSlot());
  });
});
