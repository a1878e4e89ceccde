/**
 * The gapless ledger (src/gapless/ledger.ts) on each database: its clock,
 * and its two tables gone back apart (a restore that put one back before
 * the other, or stopped between them). A take refuses with
 * `gapless_ledger_behind` while the counter and the ledger's last row
 * disagree, whichever is ahead, the one-trip path writes nothing, and the
 * reconcile enters every missing sequence as lost (rows kept, never issued
 * again), after which issuing goes on above them with no hole.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database';
import { LedgerBehindError } from '../../src/gapless/errors';
import { type GaplessHighWater, NO_HIGH_WATER } from '../../src/gapless/high-water';
import { SqlLedger } from '../../src/gapless/ledger';
import { transactionsOf } from '../../src/gapless/transaction';
import { NumberScheme } from '../../src/numbers/scheme';
import { describeWithServices } from '../support/describe-with-services';
import { SQL_SERVERS, createTestSchema } from '../support/services';

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
    expect(await ledger.enterLost('inv', scheme, period, 3n)).toEqual({ from: 1n, to: 3n, count: 3 });
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

const scheme = NumberScheme.of(NumberScheme.settings({ format: 'INV{seq:6}', reset: 'never' }));

/** The ledger's tables gone back apart, on one database (opened by `open`). */
function tablesApart(open: () => Promise<{ db: Database; ledger: SqlLedger; done: () => Promise<void> }>) {
  let db: Database;
  let ledger: SqlLedger;
  let done: () => Promise<void>;
  beforeAll(async () => ({ db, ledger, done } = await open()));
  afterAll(() => done?.());

  const issue = (key: string, count: number, record: GaplessHighWater = NO_HIGH_WATER) =>
    ledger.issue(key, scheme, [{ count }], record);
  const firstOf = async (key: string, count = 1) => {
    const { answers } = await issue(key, count);
    return (answers[0] as { first: bigint }).first;
  };
  const period = scheme.calendar.at(Date.now());
  const rows = async (key: string) =>
    (await ledger.entries(key, period.id, 0n, 1000)).map((e) => [Number(e.seq), e.status]);
  /** A take on the one-trip path from `before`, where the database has one: what it wrote. */
  const tripFrom = async (key: string, before: bigint) =>
    ledger.oneTrip ? ledger.issueKnown(key, scheme, period, [{ count: 1 }], before) : undefined;

  it('the ledger put back, the counter not: refused, nothing written, the reconcile enters the missing numbers lost', async () => {
    expect(await firstOf('apart-a', 10)).toBe(1n);
    await db.execute('DELETE FROM gapless_number WHERE entity_key = ? AND seq > 4', ['apart-a']);
    const audit = await ledger.audit('apart-a', period.id);
    expect(audit.holes).toEqual([{ from: '5', to: '10' }]);

    await expect(issue('apart-a', 1)).rejects.toThrow(LedgerBehindError);
    await expect(issue('apart-a', 1)).rejects.toThrow("the counter is at 10 but the ledger's last row is 4");
    expect(await tripFrom('apart-a', 10n)).toBeUndefined();
    expect(await ledger.counter('apart-a', period.id)).toBe(10n);
    expect(await rows('apart-a')).toHaveLength(4);

    expect(await ledger.enterLost('apart-a', scheme, period, undefined)).toEqual({ from: 5n, to: 10n, count: 6 });
    expect(await firstOf('apart-a')).toBe(11n);
    expect(await ledger.audit('apart-a', period.id)).toMatchObject({ issued: 5, lost: 6, holes: [], counter: '11' });
  });

  it('the counter put back, the ledger not: refused, nothing issued twice, the reconcile moves the counter up to the ledger', async () => {
    expect(await firstOf('apart-b', 10)).toBe(1n);
    await db.execute('UPDATE gapless_counter SET seq = 4 WHERE entity_key = ?', ['apart-b']);

    await expect(issue('apart-b', 1)).rejects.toThrow("the counter is at 4 but the ledger's last row is 10");
    expect(await tripFrom('apart-b', 4n)).toBeUndefined();
    expect(await rows('apart-b')).toEqual(Array.from({ length: 10 }, (_, i) => [i + 1, 'issued']));

    expect(await ledger.enterLost('apart-b', scheme, period, undefined)).toBeUndefined();
    expect(await ledger.counter('apart-b', period.id)).toBe(10n);
    expect(await firstOf('apart-b')).toBe(11n);
    expect(await ledger.audit('apart-b', period.id)).toMatchObject({ issued: 11, lost: 0, holes: [], duplicates: [] });
  });

  it('both put back behind the high-water record: refused by the record, the reconcile enters up to it', async () => {
    expect(await firstOf('apart-c', 10)).toBe(1n);
    await db.execute('DELETE FROM gapless_number WHERE entity_key = ? AND seq > 4', ['apart-c']);
    await db.execute('UPDATE gapless_counter SET seq = 4 WHERE entity_key = ?', ['apart-c']);
    const record: GaplessHighWater = { kind: 'redis', get: () => Promise.resolve(10n), raise: () => Promise.resolve() };

    await expect(issue('apart-c', 1, record)).rejects.toThrow('the ledger ends at 4 but the redis records 10 issued');
    expect(await ledger.enterLost('apart-c', scheme, period, 10n)).toEqual({ from: 5n, to: 10n, count: 6 });
    expect(await firstOf('apart-c')).toBe(11n);
  });

  it('rows missing below the last one (a partial restore): the reconcile enters them lost and keeps the rows around them', async () => {
    expect(await firstOf('apart-d', 10)).toBe(1n);
    await db.execute('DELETE FROM gapless_number WHERE entity_key = ? AND seq BETWEEN 3 AND 5', ['apart-d']);
    expect((await ledger.audit('apart-d', period.id)).holes).toEqual([{ from: '3', to: '5' }]);

    expect(await ledger.enterLost('apart-d', scheme, period, 10n)).toEqual({ from: 3n, to: 5n, count: 3 });
    expect(await rows('apart-d')).toEqual(
      Array.from({ length: 10 }, (_, i) => [i + 1, i >= 2 && i <= 4 ? 'lost' : 'issued']),
    );
    expect(await firstOf('apart-d')).toBe(11n);
    expect(await ledger.audit('apart-d', period.id)).toMatchObject({ issued: 8, lost: 3, holes: [] });
  });
}

/** A ledger on the database at `url` (migrated), closed with it before `drop`. */
async function ledgerAt(url: string, file: string | undefined, drop: () => Promise<void> | void) {
  const db = await openDatabase(url, { migrate: true });
  const ledger = new SqlLedger(db, transactionsOf(db, file), { now: () => Date.now() });
  const done = async () => {
    await ledger.close();
    await db.close();
    await drop();
  };
  return { db, ledger, done };
}

describe('the gapless ledger with its tables gone back apart on SQLite', () => {
  tablesApart(() => {
    const dir = mkdtempSync(join(tmpdir(), 'idpool-ledger-apart-'));
    const file = join(dir, 'idpool.db');
    return ledgerAt(`sqlite:${file}`, file, () => rmSync(dir, { recursive: true, force: true }));
  });
});

for (const { server, name } of SQL_SERVERS)
  describeWithServices(`the gapless ledger with its tables gone back apart on ${name}`, { [server]: true }, () => {
    tablesApart(async () => {
      const schema = await createTestSchema(server);
      return ledgerAt(schema.url, undefined, () => schema.drop());
    });
  });
