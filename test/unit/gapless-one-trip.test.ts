/**
 * The gapless series' one-trip path (src/gapless/series.ts) against a
 * ledger in memory: where the instance knows the counter a group goes in
 * one trip, one trip of an entity at a time; a trip that finds the counter
 * elsewhere writes nothing and the locking path answers; a high-water
 * record above the known counter sends no trip.
 */
import { describe, expect, it } from 'vitest';
import type { EntityConfig } from '../../src/entities/entity';
import { LedgerBehindError } from '../../src/gapless/errors';
import type { GaplessHighWater } from '../../src/gapless/high-water';
import type { LedgerSpan, LedgerTake } from '../../src/gapless/ledger';
import { GaplessSeries } from '../../src/gapless/series';
import { systemClock } from '../../src/clock';
import { silentLogger } from '../../src/logger';
import type { Period } from '../../src/numbers/period';
import type { NumberScheme } from '../../src/numbers/scheme';
import { entityConfig } from '../support/entity';

const NOW = Date.parse('2026-11-29T10:00:00Z');
const inv: EntityConfig = entityConfig({
  key: 'inv',
  maxSizePerTimes: 100,
  numbers: { format: 'INV{seq:6}', reset: 'never', timeZone: 'UTC' },
  gapless: true,
});

/** A period's counter and its ledger rows in memory; each call answers after a turn of the event loop, as a database does. */
class MemoryLedger {
  counter = 0n;
  readonly seqs: bigint[] = [];
  locking = 0;
  trips = 0;
  tripMisses = 0;
  private tripsNow = 0;
  mostTripsAtOnce = 0;
  readonly oneTrip = true;
  /** While set, trips wait for it before they reach the counter. */
  gate: Promise<void> | undefined;

  private write(period: Period, takes: readonly LedgerTake[]): LedgerSpan[] {
    let next = this.counter + 1n;
    const spans = takes.map((t) => {
      const span = { period: period.id, first: next, count: t.count, replayed: false };
      for (let k = 0; k < t.count; k++) this.seqs.push(next++);
      return span;
    });
    this.counter = next - 1n;
    return spans;
  }

  async issue(key: string, scheme: NumberScheme, takes: readonly LedgerTake[], highWater: GaplessHighWater) {
    this.locking++;
    await new Promise((r) => setImmediate(r));
    const period = scheme.calendar.at(NOW);
    const recorded = await highWater.get(key, period.id);
    if (recorded !== undefined && this.counter < recorded)
      throw LedgerBehindError.behindRecord(key, period.id, this.counter, recorded, highWater.kind);
    const answers = this.write(period, takes);
    return { answers, period, last: this.counter };
  }

  async issueKnown(_key: string, _scheme: NumberScheme, period: Period, takes: readonly LedgerTake[], before: bigint) {
    this.trips++;
    this.mostTripsAtOnce = Math.max(this.mostTripsAtOnce, ++this.tripsNow);
    await new Promise((r) => setTimeout(r, 1));
    await this.gate;
    this.tripsNow--;
    if (this.counter === before) return this.write(period, takes);
    this.tripMisses++;
    return undefined;
  }

  void = () => Promise.reject(new Error('not here'));
  entries = () => Promise.reject(new Error('not here'));
  audit = () => Promise.reject(new Error('not here'));
  now = () => Promise.resolve(NOW);
  enterLost = () => Promise.reject(new Error('not here'));
}

function setup() {
  const ledger = new MemoryLedger();
  const record = { seq: undefined as bigint | undefined, reads: 0 };
  const highWater: GaplessHighWater = {
    kind: 'redis',
    // Read once per group before its trip (or in its locking transaction).
    get: () => {
      record.reads++;
      return Promise.resolve(record.seq);
    },
    raise: (_key, _period, seq) => {
      if (record.seq === undefined || record.seq < seq) record.seq = seq;
      return Promise.resolve();
    },
  };
  const series = new GaplessSeries({ ledger, highWater, log: silentLogger, clock: systemClock });
  const take = (count = 1) => series.take(inv, count).then((n) => n.numbers.map((x) => Number(x.slice(3))));
  return { ledger, record, series, take };
}

describe('a gapless series in one trip a group (a ledger in memory)', () => {
  it('one instance: the first groups take the locking path, every later one a trip, one trip at a time; the numbers continuous', async () => {
    const { ledger, take } = setup();
    // Eight clients, each taking again as soon as answered, half of them a millisecond late: groups overlap.
    const taken = (
      await Promise.all(
        Array.from({ length: 8 }, async (_, c) => {
          await new Promise((r) => setTimeout(r, c % 2));
          const mine: number[] = [];
          for (let i = 0; i < 10; i++) mine.push(...(await take(1 + ((c + i) % 3))));
          return mine;
        }),
      )
    ).flat();
    expect([...taken].sort((a, b) => a - b)).toEqual(Array.from({ length: taken.length }, (_, i) => i + 1));
    // Before the instance knows the counter: the first group, and one formed while it ran.
    expect(ledger.locking).toBeLessThanOrEqual(2);
    expect(ledger.trips).toBeGreaterThanOrEqual(5);
    expect(ledger.tripMisses).toBe(0);
    expect(ledger.mostTripsAtOnce).toBe(1);
  });

  it("two groups in flight: the second's trip goes once the first's is answered (sent together, it could arrive first and miss)", async () => {
    const { ledger, record, take } = setup();
    await take();
    const reads = record.reads;
    let open: () => void = () => undefined;
    ledger.gate = new Promise<void>((r) => (open = r));
    const first = take(2);
    await new Promise((r) => setTimeout(r, 5));
    const second = take(3);
    await new Promise((r) => setTimeout(r, 5));
    // Both groups under way (each read the high-water record), one trip sent.
    expect(record.reads - reads).toBe(2);
    expect(ledger.trips).toBe(1);
    open();
    expect(await first).toEqual([2, 3]);
    expect(await second).toEqual([4, 5, 6]);
    expect(ledger).toMatchObject({ trips: 2, tripMisses: 0, locking: 1 });
  });

  it('a counter another instance moved: the trip writes nothing, the locking path answers, then trips again', async () => {
    const { ledger, take } = setup();
    expect(await take()).toEqual([1]);
    expect(await take()).toEqual([2]);
    ledger.counter += 5n;
    ledger.seqs.push(3n, 4n, 5n, 6n, 7n);
    expect(await take(2)).toEqual([8, 9]);
    expect(ledger).toMatchObject({ locking: 2, trips: 2 });
    expect(await take()).toEqual([10]);
    expect(ledger).toMatchObject({ locking: 2, trips: 3 });
    expect(ledger.seqs).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i + 1)));
  });

  it('a high-water record above the known counter (the database went back to where this instance left it): no trip, 503', async () => {
    const { ledger, record, take } = setup();
    await take();
    await take();
    expect(ledger.trips).toBe(1);
    record.seq = 9n;
    await expect(take()).rejects.toBeInstanceOf(LedgerBehindError);
    expect(ledger.trips).toBe(1);
    expect(ledger.counter).toBe(2n);
  });
});
