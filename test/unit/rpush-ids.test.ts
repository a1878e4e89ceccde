import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { type NumberRun, RpushIds, RpushNumbers } from '../../src/pool/redis-rpush-ids';
import { IdStride } from '../../src/segment/stride';

// A push writes its RPUSH by hand (RedisPoolStore.push): the bytes must be
// exactly what ioredis writes for `rpush(key, ...ids)`.
describe('RpushIds', () => {
  const ioredisBytes = (key: string, ids: string[]) => {
    const writable = new Command('rpush', [key, ...ids]).toWritable(undefined as never);
    return typeof writable === 'string' ? Buffer.from(writable, 'utf8') : writable;
  };
  const same = (key: string, ids: string[]) =>
    expect(new RpushIds(key, ids).toWritable().equals(ioredisBytes(key, ids))).toBe(true);
  /** Ids handed over as numbers: the bytes of their decimal strings. */
  const sameAsNumbers = (key: string, ids: Float64Array) =>
    expect(new RpushIds(key, ids).toWritable().equals(ioredisBytes(key, Array.from(ids, String)))).toBe(true);

  it("writes the bytes ioredis writes, for ids of 1 to 20 digits and every entity key's form", () => {
    same('idpool:{orders}:pushing', ['1']);
    same('idpool:{orders}:pushing', ['7', '12', '999999999', '1000000000', '9007199254740993', '18446744073709551615']);
    same('custom-prefix:{a.b_c-9}:pushing', new IdStride(3, 2).idStrings(10n, 10_010n));
    same('idpool:{orders}:pushing', new IdStride(1, 0).idStrings(9_007_199_254_730_000n, 9_007_199_254_750_000n));
  });

  it('writes the same bytes for ids handed over as numbers, of 1 to 16 digits, up to 2^53 − 1', () => {
    const edges = [
      0, 1, 9, 10, 99, 100, 999_999_999, 1_000_000_000, 9_999_999_999, 10_000_000_000, 999_999_999_999_999,
      1_000_000_000_000_000, 9_007_199_254_740_991,
    ];
    sameAsNumbers('idpool:{orders}:pushing', new Float64Array(edges));
    for (let d = 0; d <= 15; d++)
      sameAsNumbers(
        'idpool:{orders}:pushing',
        new Float64Array([10 ** d - 1, 10 ** d, 10 ** d + 1].filter((n) => n >= 0)),
      );
    sameAsNumbers('custom-prefix:{a.b_c-9}:pushing', new IdStride(3, 2).pushIds(10n, 10_010n) as Float64Array);
    sameAsNumbers(
      'idpool:{orders}:pushing',
      new IdStride(1, 0).pushIds(9_007_199_254_730_000n, 9_007_199_254_740_992n) as Float64Array,
    );
    // Every length, and digits of every kind in every place: 20,000 ids spread over 0..2^53.
    sameAsNumbers(
      'idpool:{orders}:pushing',
      new Float64Array(
        Array.from(
          { length: 20_000 },
          () => Math.floor(Math.random() * 10 ** Math.floor(Math.random() * 17)) % 2 ** 53,
        ),
      ),
    );
  });

  it('IdStride.pushIds gives numbers below 2^53 and the same ids as strings beyond; idStrings the same ids as strings', () => {
    const stride = new IdStride(3, 2);
    // n·3 + 2 in bigint arithmetic, apart from the code under test.
    const expected = Array.from({ length: 1000 }, (_, k) => String((10n + BigInt(k)) * 3n + 2n));
    expect(Array.from(stride.pushIds(10n, 1_010n) as Float64Array, String)).toEqual(expected);
    expect(stride.idStrings(10n, 1_010n)).toEqual(expected);
    const beyond = new IdStride(1, 0).pushIds(9_007_199_254_740_990n, 9_007_199_254_740_994n);
    expect(beyond).toEqual(['9007199254740990', '9007199254740991', '9007199254740992', '9007199254740993']);
    expect(new IdStride(1, 0).pushIds(5n, 5n)).toEqual([]);
  });

  it('is an RPUSH of its key, so a Cluster pipeline finds its slot', () => {
    const command = new RpushIds('idpool:{orders}:pushing', ['1', '2']);
    expect(command.name).toBe('rpush');
    expect(command.getKeys()).toEqual(['idpool:{orders}:pushing']);
    expect(command.getSlot()).toBe(new Command('rpush', ['idpool:{orders}:ids', '1']).getSlot());
  });
});

// A business-number push writes its numbers from their sequences (RedisNumberStore.push): the same bytes as
// ioredis writes for the formatted strings, whatever the width, the digits and the literal around the sequence.
describe('RpushNumbers', () => {
  const formatted = (run: NumberRun) =>
    Array.from(run.seqs, (s) => run.head + String(s).padStart(run.width, '0') + run.tail);
  const ioredisBytes = (key: string, numbers: string[]) => {
    const writable = new Command('rpush', [key, ...numbers]).toWritable(undefined as never);
    return typeof writable === 'string' ? Buffer.from(writable, 'utf8') : writable;
  };
  const same = (run: NumberRun) =>
    expect(
      new RpushNumbers('idpool:{receipts}:pushing', run)
        .toWritable()
        .equals(ioredisBytes('idpool:{receipts}:pushing', formatted(run))),
    ).toBe(true);

  it('writes the bytes ioredis writes for the formatted numbers, widths 1 to 16, sequences at every digit edge', () => {
    for (let width = 1; width <= 16; width++) {
      const edges = [1, 9, 10, 11, 99_999_999, 100_000_000, 100_000_001, 10 ** width - 1].filter(
        (s) => s < 10 ** width,
      );
      same({ head: 'INV20261128-', tail: '', width, seqs: new Float64Array(edges) });
      same({ head: '', tail: '/2026.11', width, seqs: new Float64Array(edges) });
    }
    same({
      head: 'SH2026112800',
      tail: 'X',
      width: 5,
      seqs: Float64Array.from({ length: 10_000 }, (_, i) => 10_000 + i),
    });
    same({ head: 'A', tail: 'B', width: 16, seqs: new Float64Array([9_007_199_254_740_991, 1_000_000_000_000_000]) });
  });

  it('writes the same bytes for consecutive runs written a hundred at a time, from any start, across digit edges', () => {
    const run = (from: number, length: number) => Float64Array.from({ length }, (_, i) => from + i);
    for (const [from, length, width] of [
      [1, 1_000, 4],
      [37, 1_234, 12],
      [9_950, 200, 5],
      [99_999_937, 350, 12],
      [999_999_999_900, 100, 12],
      [9_007_199_254_740_000, 992, 16],
      [0, 100, 2],
    ])
      same({ head: 'INV20261128-', tail: '/X', width, seqs: run(from, length) });
    // Runs broken mid-block (a trend entity's shuffled step, a gap) are written number by number.
    const broken = run(1_000, 500);
    [broken[150], broken[160]] = [broken[160], broken[150]];
    broken[420] = 7;
    same({ head: 'R', tail: '', width: 6, seqs: broken });
    // A block below the one before, with fewer digits: the digits it no longer has are zeros again.
    same({
      head: 'R',
      tail: '',
      width: 6,
      seqs: Float64Array.of(...run(123_400, 100), ...run(500, 100), ...run(1_000, 100)),
    });
  });
});
