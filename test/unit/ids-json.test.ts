import { describe, expect, it } from 'vitest';
import { idsJson } from '../../src/http/routes/ids';
import { JoinedIds, type TakenIds, listedIds } from '../../src/pool/taken-ids';
import { Snowflake } from '../../src/snowflake/snowflake';

/** Ids as a large Redis take holds them: joined from their bytes, as views of one reply buffer. */
function joined(ids: readonly string[]): TakenIds {
  const reply = Buffer.from(ids.map((id) => `$${id.length}\r\n${id}\r\n`).join(''), 'latin1');
  const views: Buffer[] = [];
  let at = 0;
  for (const id of ids) {
    at += `$${id.length}\r\n`.length;
    views.push(reply.subarray(at, at + id.length));
    at += id.length + 2;
  }
  const taken = JoinedIds.fromBytes(views);
  // The reply's bytes go back to the socket's pool: the ids must not be views of them.
  reply.fill(0);
  return taken;
}

// The take route writes its body by join, not JSON.stringify (routes/ids.ts):
// it must be the very bytes JSON.stringify({ ids }) would have written, for
// every kind of id idpool hands out, held either way TakenIds holds them.
describe('the take route body', () => {
  const same = (ids: string[]) => {
    expect(idsJson(listedIds(ids))).toBe(JSON.stringify({ ids }));
    expect(idsJson(joined(ids))).toBe(JSON.stringify({ ids }));
  };

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

describe('TakenIds', () => {
  const ids = Array.from({ length: 40 }, (_, i) => String(7 * 10 ** (i % 19) + i));

  it('slices like an array, either way it holds the ids, and slices of slices too', () => {
    for (const taken of [listedIds(ids), joined(ids)]) {
      expect(taken.length).toBe(40);
      expect(taken.toArray()).toEqual(ids);
      for (const [from, to] of [
        [0, 0],
        [0, 1],
        [3, 17],
        [39, 40],
        [0, 40],
        [25, 60],
        [41, 45],
      ]) {
        const part = taken.slice(from, to);
        expect(part.length).toBe(ids.slice(from, to).length);
        expect(part.toArray()).toEqual(ids.slice(from, to));
        expect(JSON.parse(part.toJson())).toEqual(ids.slice(from, to));
        expect(part.slice(1, 5).toArray()).toEqual(ids.slice(from, to).slice(1, 5));
      }
    }
  });

  it("a share of a take answers with its own ids only, the whole take with the bytes it holds; the reply's bytes are not kept", () => {
    const taken = joined(ids);
    expect(Buffer.isBuffer(taken.body())).toBe(true);
    expect(idsJson(taken)).toBe(JSON.stringify({ ids }));
    for (const [from, to] of [
      [0, 1],
      [0, 39],
      [1, 40],
      [12, 13],
      [5, 5],
    ])
      expect(idsJson(taken.slice(from, to))).toBe(JSON.stringify({ ids: ids.slice(from, to) }));
    // Business numbers: the route's answer holds them as they are, letters and separators included.
    const numbers = ['INV20261128-000001', 'INV20261128-000002', 'ORD/26.11_28-9'];
    expect(idsJson(joined(numbers))).toBe(JSON.stringify({ ids: numbers }));
    expect(idsJson(joined(numbers).slice(1, 3))).toBe(JSON.stringify({ ids: numbers.slice(1) }));
  });
});
