import { describe, expect, it } from 'vitest';
import { IdStride } from '../../src/segment/stride';

describe('IdStride.of: the deployment stride composed with an entity spacing', () => {
  it('is the stride itself for delta 1, remainder 0', () => {
    const stride = new IdStride(4, 3);
    expect(stride.of({ delta: 1, remainder: 0 })).toBe(stride);
  });

  it('maps n to (n·c + i)·delta + remainder, past 2^53 exactly', () => {
    const spaced = new IdStride(4, 3).of({ delta: 7, remainder: 5 });
    expect([spaced.count, spaced.index]).toEqual([28, 26]);
    for (const n of [0n, 1n, 2n ** 60n]) expect(spaced.toId(n)).toBe((n * 4n + 3n) * 7n + 5n);
    expect(spaced.idStrings(2n ** 53n, 2n ** 53n + 2n)).toEqual([
      ((2n ** 53n * 4n + 3n) * 7n + 5n).toString(),
      (((2n ** 53n + 1n) * 4n + 3n) * 7n + 5n).toString(),
    ]);
  });

  it('refuses a remainder not below delta', () => {
    expect(() => new IdStride().of({ delta: 3, remainder: 3 })).toThrow(/remainder < delta/);
  });

  it('firstNumberFrom gives the first number whose id is at least the given one', () => {
    const spaced = new IdStride().of({ delta: 10, remainder: 3 });
    // Tinyid max_id 2^53 + 7 with delta 10, remainder 3: first safe id 2^53 + 11 (≡ 3 mod 10).
    const firstSafe = 2n ** 53n + 11n;
    expect(firstSafe % 10n).toBe(3n);
    const n = spaced.firstNumberFrom(firstSafe);
    expect(spaced.toId(n)).toBe(firstSafe);
    expect(spaced.toId(n - 1n) < firstSafe).toBe(true);
    expect(new IdStride(3, 2).firstNumberFrom(1000n)).toBe(333n); // 333·3 + 2 = 1001
    expect(new IdStride(3, 2).firstNumberFrom(1n)).toBe(0n);
  });
});
