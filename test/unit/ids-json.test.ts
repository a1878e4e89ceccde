import { describe, expect, it } from 'vitest';
import { idsJson } from '../../src/http/routes/ids';
import { Snowflake } from '../../src/snowflake/snowflake';

// The take route writes its body by join, not JSON.stringify (routes/ids.ts):
// it must be the very bytes JSON.stringify({ ids }) would have written, for
// every kind of id idpool hands out.
describe('the take route body', () => {
  const same = (ids: string[]) => expect(idsJson(ids)).toBe(JSON.stringify({ ids }));

  it('is JSON.stringify({ ids }) for segment ids, one, none and many', () => {
    same([]);
    same(['1']);
    same(['0', '7', '18446744073709551615']);
    same(Array.from({ length: 1000 }, (_, i) => String(1_000_000_000_000 + i * 3)));
    same('1,2,3,10,11'.split(','));
  });

  it('is JSON.stringify({ ids }) for snowflake ids, below and above 2^53, in every layout the generator builds them', async () => {
    const layouts = [
      {},
      { workerBits: 8 },
      { reservedBits: 3, reservedValue: 5 },
      { timeUnit: 's' as const, timestampBits: 31, workerBits: 3 },
      { timestampBits: 55, workerBits: 3 },
    ];
    const sizes = new Set<string>();
    for (const layout of layouts) {
      const generator = new Snowflake({ layout, workerId: 5 });
      const ids = await generator.takeStrings('orders', 5000);
      expect(ids.every((id) => /^[1-9]\d*$/.test(id))).toBe(true);
      same(ids);
      same(ids.slice(0, 1));
      sizes.add(BigInt(ids[0]) >= 2n ** 53n ? 'bigint' : 'number');
    }
    expect([...sizes].sort()).toEqual(['bigint', 'number']);
  });
});
