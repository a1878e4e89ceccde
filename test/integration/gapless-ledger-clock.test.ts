import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database';
import { SqlLedger } from '../../src/gapless/ledger';
import { transactionsOf } from '../../src/gapless/transaction';
import { NumberScheme } from '../../src/numbers/scheme';

/** A fixed instant, far from the machine's: what the ledger writes of its own clock shows it. */
const FIXED = Date.UTC(2031, 4, 6, 7, 8, 9);

describe('the gapless ledger reads time through its clock (SQLite file)', () => {
  let dir: string;
  let db: Database;
  let ledger: SqlLedger;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idpool-ledger-clock-'));
    const file = join(dir, 'idpool.db');
    db = await openDatabase(`sqlite:${file}`, { migrate: true });
    ledger = new SqlLedger(db, transactionsOf(db, file), { now: () => FIXED });
  });

  afterAll(async () => {
    await ledger?.close();
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('numbers entered lost in a period without a counter row are issued at, and the counter updated at, its time', async () => {
    const scheme = NumberScheme.of(NumberScheme.settings({ format: 'INV{yyyy}-{seq:4}', reset: 'yearly' }));
    const period = scheme.calendar.at(FIXED);
    expect(await ledger.enterLost('inv', scheme, period, 3n)).toEqual({ from: 1n, to: 3n });
    const entries = await ledger.entries('inv', period.id, 0n, 10);
    expect(entries.map((e) => [e.number, e.status, e.issuedAt])).toEqual([
      ['INV2031-0001', 'lost', FIXED],
      ['INV2031-0002', 'lost', FIXED],
      ['INV2031-0003', 'lost', FIXED],
    ]);
    const [counter] = await db.query<{ update_time: unknown }>(
      'SELECT update_time FROM gapless_counter WHERE entity_key = ? AND period = ?',
      ['inv', period.id],
    );
    expect(Number(counter.update_time)).toBe(FIXED);
  });
});
