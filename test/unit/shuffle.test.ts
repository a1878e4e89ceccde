import { describe, expect, it } from 'vitest';
import { shuffle } from '../../src/pool/segment-push';

describe('shuffle (trend steps)', () => {
  it('permutes exactly items[from..to) of a typed array, in place, and leaves the rest where it was', () => {
    const ids = new Float64Array(Array.from({ length: 300 }, (_, i) => 1000 + i));
    shuffle(ids, 100, 200);
    expect(Array.from(ids.subarray(0, 100))).toEqual(Array.from({ length: 100 }, (_, i) => 1000 + i));
    expect(Array.from(ids.subarray(200))).toEqual(Array.from({ length: 100 }, (_, i) => 1200 + i));
    const step = Array.from(ids.subarray(100, 200));
    expect([...step].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => 1100 + i));
    expect(step).not.toEqual([...step].sort((a, b) => a - b)); // 1 in 100! that a shuffle leaves it sorted
  });

  it('shuffles a whole array of strings by default', () => {
    const ids = Array.from({ length: 100 }, (_, i) => String(i));
    shuffle(ids);
    expect([...ids].sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
    expect(ids).not.toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
  });
});
