import { describe, expect, it } from 'vitest';
import { type IncumbentRow, firstSafeId, mergeRows, parseRenames, planImport } from '../../src/cli/import-from';

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

  it('skips misfit keys not renamed, naming --key, keeps --only rows, clamps a huge step with a note', () => {
    const plan = planImport(
      'leaf',
      [row({ key: 'bad key' }), row({ key: 'orders', step: 5_000_000, description: 'Orders' }), row({ key: 'other' })],
      new Set(['bad key', 'orders']),
    );
    expect(plan.skipped).toEqual([
      {
        key: 'bad key',
        reason: expect.stringContaining(
          "does not fit idpool (1-64 of A-Z a-z 0-9 _ - .): import it under a key of your choice with --key 'bad key=KEY'",
        ),
      },
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

  it('--key TAG=KEY imports a misfit tag under KEY, its row named as the incumbent (the alias the compat routes answer)', () => {
    const rows = [row({ key: 'order:v2', maxId: 501n }), row({ key: 'orders' })];
    const plan = planImport('leaf', rows, undefined, parseRenames(['order:v2=order_v2'], rows));
    expect(plan.skipped).toEqual([]);
    expect(plan.entities.map((e) => [e.key, e.tag, e.firstId])).toEqual([
      ['order_v2', 'order:v2', 501n],
      ['orders', 'orders', 1n],
    ]);
    expect(plan.entities[0].body).toMatchObject({
      key: 'order_v2',
      firstId: '501',
      incumbent: { kind: 'leaf', key: 'order:v2', live: false },
    });
  });

  it('--key refuses, naming why: an unknown tag, a tag that fits, a bad or taken key, a repeat', () => {
    const rows = [row({ key: 'order:v2' }), row({ key: 'a b' }), row({ key: 'v=2' }), row({ key: 'orders' })];
    const refused = (pairs: string[]) => {
      try {
        parseRenames(pairs, rows);
      } catch (err) {
        return { code: (err as { exitCode?: number }).exitCode, message: (err as Error).message };
      }
      return undefined;
    };
    expect(refused(['order:v3=x'])).toEqual({
      code: 2,
      message: '--key "order:v3=x": the incumbent\'s table has no row "order:v3"',
    });
    expect(refused(['order:v2'])?.message).toContain('give TAG=KEY, e.g. --key order:v2=order_v2');
    expect(refused(['orders=o2'])?.message).toContain('"orders" fits idpool\'s keys: it is imported under itself');
    expect(refused(['order:v2=a:b'])?.message).toContain('"a:b" is not an idpool key');
    expect(refused(['order:v2=orders'])?.message).toContain('"orders" is another row\'s tag');
    expect(refused(['order:v2=x', 'a b=x'])?.message).toContain('"x" is given to two tags');
    expect(refused(['order:v2=x', 'order:v2=y'])?.message).toContain('"order:v2" is given twice');
    // A tag holding "=" splits at the last one (a key has none).
    expect(parseRenames(['v=2=k1', 'order:v2=k2'], rows)).toEqual(
      new Map([
        ['v=2', 'k1'],
        ['order:v2', 'k2'],
      ]),
    );
  });
});
