import { describe, expect, it } from 'vitest';
import { type IncumbentRow, firstSafeId, mergeRows, planImport } from '../../src/cli/import-from';

const row = (over: Partial<IncumbentRow>): IncumbentRow => ({
  key: 'orders',
  maxId: 1n,
  step: 1000,
  description: null,
  delta: 1,
  remainder: 0,
  tokens: [],
  ...over,
});

describe('import-from: first safe ids, merging, the plan (no I/O)', () => {
  it("Leaf's max_id itself was never issued; Tinyid's first value above max_id with v % delta == remainder", () => {
    expect(firstSafeId('leaf', row({ maxId: 2n ** 63n - 1n }))).toBe(2n ** 63n - 1n);
    expect(firstSafeId('tinyid', row({ maxId: 2n ** 53n + 7n }))).toBe(2n ** 53n + 8n);
    // 2^53 + 7 ≡ 9 (mod 10): the next ≡ 3 is 2^53 + 11.
    expect(firstSafeId('tinyid', row({ maxId: 2n ** 53n + 7n, delta: 10, remainder: 3 }))).toBe(2n ** 53n + 11n);
    expect(firstSafeId('tinyid', row({ maxId: 9n, delta: 2, remainder: 1 }))).toBe(11n);
    expect(firstSafeId('tinyid', row({ maxId: 10n, delta: 2, remainder: 1 }))).toBe(11n);
    expect(firstSafeId('tinyid', row({ maxId: 0n, delta: 3, remainder: 0 }))).toBe(3n);
  });

  it('several databases: one row per key, the highest max_id wins, tokens pooled', () => {
    const merged = mergeRows([
      [row({ key: 'b', maxId: 50n, remainder: 0, delta: 2, tokens: ['t1'] }), row({ key: 'a', maxId: 1n })],
      [row({ key: 'b', maxId: 90n, remainder: 1, delta: 2, tokens: ['t2', 't1'] })],
    ]);
    expect(merged.map((r) => r.key)).toEqual(['a', 'b']);
    expect(merged[1]).toMatchObject({ maxId: 90n, remainder: 1, tokens: ['t1', 't2'] });
  });

  it('skips misfit keys (never renamed), keeps --only rows, clamps a huge step with a note', () => {
    const plan = planImport(
      'leaf',
      [row({ key: 'bad key' }), row({ key: 'orders', step: 5_000_000, description: 'Orders' }), row({ key: 'other' })],
      new Set(['bad key', 'orders']),
    );
    expect(plan.skipped).toEqual([
      { key: 'bad key', reason: expect.stringMatching(/does not fit idpool.*not renamed/) },
    ]);
    expect(plan.entities.map((e) => e.key)).toEqual(['orders']);
    expect(plan.entities[0].body).toEqual({
      key: 'orders',
      firstId: '1',
      step: 1_000_000,
      name: 'Orders',
      mode: 'monotonic',
      compat: ['leaf'],
      incumbent: { kind: 'leaf', key: 'orders', live: false },
    });
    expect(plan.entities[0].notes).toEqual(["step 5000000 lowered to idpool's 1000000"]);
  });
});
