import { expect, it } from 'vitest';
import type { NumberCounter } from '../../../src/segment/number-counter';

/** A number counter with no period counted yet (the SQL one on empty tables). */
export type NumberCounterFactory = () => Promise<NumberCounter>;

const DAY = { id: '20261128', end: Date.UTC(2026, 10, 29) };
const NEXT_DAY = { id: '20261129', end: Date.UTC(2026, 10, 30) };

/**
 * What every number counter does, run against SQL and the in-process fake
 * alike: reservations in order from 1, short at the capacity and none past
 * it, periods and entities apart, a raise that never lowers, pruning by the
 * period's end.
 */
export function numberCounterContract(make: NumberCounterFactory): void {
  it('reserves in order from 1 per period and entity; peek is the highest reserved, 0 before the first', async () => {
    const counter = await make();
    expect(await counter.peek('n-order', DAY.id)).toBe(0n);
    expect(await counter.reserve('n-order', DAY, 10, 999n)).toEqual({ first: 1n, last: 10n });
    expect(await counter.reserve('n-order', DAY, 5, 999n)).toEqual({ first: 11n, last: 15n });
    expect(await counter.reserve('n-order', NEXT_DAY, 3, 999n)).toEqual({ first: 1n, last: 3n });
    expect(await counter.reserve('n-other', DAY, 2, 999n)).toEqual({ first: 1n, last: 2n });
    expect(await counter.peek('n-order', DAY.id)).toBe(15n);
  });

  it('reserves fewer at the capacity, then none', async () => {
    const counter = await make();
    expect(await counter.reserve('n-full', DAY, 8, 10n)).toEqual({ first: 1n, last: 8n });
    expect(await counter.reserve('n-full', DAY, 8, 10n)).toEqual({ first: 9n, last: 10n });
    expect(await counter.reserve('n-full', DAY, 1, 10n)).toBeUndefined();
    expect(await counter.peek('n-full', DAY.id)).toBe(10n);
  });

  it('raise moves the counter up, never down, and the next reservation follows it', async () => {
    const counter = await make();
    expect(await counter.raise('n-raise', DAY, 100n)).toBe(100n);
    expect(await counter.raise('n-raise', DAY, 50n)).toBe(100n);
    expect(await counter.reserve('n-raise', DAY, 1, 999n)).toEqual({ first: 101n, last: 101n });
  });

  it('prune deletes the counters of periods that ended before the time given, and only those', async () => {
    const counter = await make();
    await counter.reserve('n-prune', DAY, 4, 999n);
    await counter.reserve('n-prune', NEXT_DAY, 4, 999n);
    expect(await counter.prune!(DAY.end + 1)).toBe(1);
    expect(await counter.peek('n-prune', DAY.id)).toBe(0n);
    expect(await counter.peek('n-prune', NEXT_DAY.id)).toBe(4n);
  });
}
