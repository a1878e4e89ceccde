import { expect, it } from 'vitest';
import type { IncumbentDatabase, IncumbentKind } from '../../../src/segment/incumbent-rows';

/**
 * An incumbent's database of `kind` whose one row stands at `max_id` 1:
 * Leaf's `orders`, or Tinyid's `items` with delta 2 and remainder 1 (the
 * real one with the incumbent's own tables, see incumbent-tables.ts).
 */
export type IncumbentDatabaseFactory = (kind: IncumbentKind) => Promise<IncumbentDatabase>;

const TINYID = { delta: 2, remainder: 1 };

/**
 * What every {@link IncumbentDatabase} does, run against MariaDB and the
 * in-memory row alike: a reservation moves the row on as the incumbent's
 * own servers do (Leaf's `max_id + size`, Tinyid's `max_id + size·delta`),
 * each one after the last, and the database answers a ping.
 */
export function incumbentDatabaseContract(make: IncumbentDatabaseFactory): void {
  it('Leaf: each reservation is the next [max_id, max_id + size) of the row', async () => {
    const db = await make('leaf');
    try {
      expect(db.kind).toBe('leaf');
      expect(await db.reserve('orders', 50, { delta: 1, remainder: 0 })).toEqual({ low: 1n, high: 51n });
      expect(await db.reserve('orders', 10, { delta: 1, remainder: 0 })).toEqual({ low: 51n, high: 61n });
      await db.ping();
    } finally {
      await db.close();
    }
  });

  it('Tinyid: each reservation is the next (max_id, max_id + size·delta] of the row', async () => {
    const db = await make('tinyid');
    try {
      expect(db.kind).toBe('tinyid');
      expect(await db.reserve('items', 5, TINYID)).toEqual({ low: 1n, high: 11n });
      expect(await db.reserve('items', 100, TINYID)).toEqual({ low: 11n, high: 211n });
      await db.ping();
    } finally {
      await db.close();
    }
  });
}
