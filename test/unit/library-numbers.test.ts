/**
 * The library's business numbers on a fake clock (issue 35): strings, the
 * period by the process clock, the sequence restarting at 1 at midnight of
 * the entity's zone, the next period reserved before the boundary, nothing
 * repeated across a restart or a counter put back, old periods pruned.
 */
import { describe, expect, it } from 'vitest';
import { type DatabaseBehindReport, UnsupportedEntityError } from '../../src/library';
import { createIdGeneratorWith } from '../../src/library/generator';
import { NumberScheme } from '../../src/numbers/scheme';
import { FakeNumberCounter } from '../../src/segment/fake-number-counter';
import { LOCAL_PREFILL_LEAD_MS } from '../../src/pool/period-pools';
import { NUMBER_PERIOD_RETENTION_MS } from '../../src/segment/number-counter';
import { FakeClock } from '../support/clock';
import { MemoryAllocator } from './library-fakes';

const numbers = NumberScheme.settings({ format: 'ORD{yy}{MM}{dd}{seq:6}', timeZone: '+05:30' });
const entities = {
  async findLive(key: string) {
    if (key === 'orders') return { mode: 'monotonic' as const, step: 10, numbers };
    if (key === 'plain') return { mode: 'monotonic' as const, step: 10 };
    return undefined;
  },
};
// 23:59:30 on 28 November in +05:30.
const BEFORE_MIDNIGHT = Date.parse('2026-11-28T18:29:30.000Z');

async function generator(clock: FakeClock, counter: FakeNumberCounter, reports: DatabaseBehindReport[] = []) {
  return createIdGeneratorWith({
    allocator: new MemoryAllocator(),
    entities,
    numberCounter: counter,
    clock,
    onDatabaseBehind: (r) => reports.push(r),
  });
}

describe('library business numbers (fake clock)', () => {
  it('strings dated by the process clock; the sequence restarts at 1 at midnight; the next day is reserved before it', async () => {
    const clock = new FakeClock({ now: BEFORE_MIDNIGHT });
    const counter = new FakeNumberCounter();
    const gen = await generator(clock, counter);
    try {
      expect(await gen.numbers('orders', 3)).toEqual(['ORD261128000001', 'ORD261128000002', 'ORD261128000003']);
      expect(counter.reservations.map((r) => r.period)).toEqual(['20261128']);
      // Within the last seconds before midnight (LOCAL_PREFILL_LEAD_MS): a take starts the next day's first step.
      clock.jump(30_000 - LOCAL_PREFILL_LEAD_MS);
      await gen.numbers('orders');
      await new Promise((resolve) => setImmediate(resolve));
      expect(counter.reservations.map((r) => r.period)).toEqual(['20261128', '20261129']);
      clock.jump(LOCAL_PREFILL_LEAD_MS + 1_000);
      const reserved = counter.reservations.length;
      expect(await gen.numbers('orders', 2)).toEqual(['ORD261129000001', 'ORD261129000002']);
      // Served from the step reserved ahead: no reservation at the boundary.
      expect(counter.reservations).toHaveLength(reserved);
      expect(await gen.numbers('orders')).toEqual(['ORD261129000003']);
    } finally {
      await gen.close();
    }
  });

  it('a restarted process skips what the last one reserved (a gap), never repeats; a counter put back is carried past', async () => {
    const clock = new FakeClock({ now: BEFORE_MIDNIGHT + 60_000 });
    const counter = new FakeNumberCounter();
    const reports: DatabaseBehindReport[] = [];
    let gen = await generator(clock, counter, reports);
    // Five of a step of ten: the other five are the restart's gap.
    const seen = await gen.numbers('orders', 5);
    await gen.close();
    gen = await generator(clock, counter, reports);
    try {
      const restarted = await gen.numbers('orders', 2);
      expect(restarted).toEqual(['ORD261129000011', 'ORD261129000012']);
      seen.push(...restarted, ...(await gen.numbers('orders', 8)));
      // The backup: the period's counter as it was after the first step (this process reserved up to 20).
      counter.setBack('orders', '20261129', 10n);
      const after = await gen.numbers('orders', 30);
      for (const n of after) expect(seen).not.toContain(n);
      expect(reports).toHaveLength(1);
      expect(reports[0]).toMatchObject({ entityKey: 'orders', period: '20261129', record: 'this process' });
      expect(reports[0].databaseOffset).toBe(10n);
      expect(reports[0].recordedOffset).toBe(20n);
      // The reservation that met the record (11–40) is wasted; the next is above both.
      expect(after[0]).toBe('ORD261129000041');
    } finally {
      await gen.close();
    }
  });

  it('next/take refuse a business-number entity and numbers() a plain one, both naming the other call', async () => {
    const clock = new FakeClock({ now: BEFORE_MIDNIGHT });
    const gen = await generator(clock, new FakeNumberCounter());
    try {
      await expect(gen.take('orders', 1)).rejects.toThrow(/business numbers .*use numbers\(entityKey, count\)/);
      await expect(gen.numbers('plain')).rejects.toBeInstanceOf(UnsupportedEntityError);
      await expect(gen.numbers('plain')).rejects.toThrow(/use next, nextAsync or take/);
    } finally {
      await gen.close();
    }
  });

  it('prunes counters of periods over for longer than the retention, keeps the others', async () => {
    const clock = new FakeClock({ now: BEFORE_MIDNIGHT + 60_000 });
    const counter = new FakeNumberCounter();
    const scheme = NumberScheme.of(numbers);
    const today = scheme.calendar.at(clock.now());
    const old = scheme.calendar.at(clock.now() - NUMBER_PERIOD_RETENTION_MS - 86_400_000);
    const recent = scheme.calendar.at(clock.now() - NUMBER_PERIOD_RETENTION_MS + 3_600_000);
    for (const p of [old, recent, today]) await counter.reserve('orders', p, 5, 999_999n);
    const gen = await generator(clock, counter);
    await gen.close();
    expect([...counter.rows.keys()].sort()).toEqual([`orders ${recent.id}`, `orders ${today.id}`].sort());
  });
});
