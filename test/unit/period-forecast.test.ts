import { describe, expect, it } from 'vitest';
import type { EntityConfig } from '../../src/entities/entity';
import { silentLogger } from '../../src/logger';
import { NumberScheme } from '../../src/numbers/scheme';
import { timeZone } from '../../src/numbers/zone';
import { Alarms } from '../../src/ops/alarms';
import { OpsMetrics } from '../../src/ops/metrics';
import { PeriodHistory, numberPeriodJson, periodForecast, runOutText } from '../../src/ops/period-forecast';
import { OpsSampler } from '../../src/ops/sampler';
import type { CounterPeriod, NumberCounter, SeqRange } from '../../src/segment/number-counter';
import { IdStride } from '../../src/segment/stride';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';
import { inProcessNumbers } from '../support/refiller';
import { SAMPLER_SETTINGS } from '../support/sampler';

const MIN = 60_000;

describe('PeriodHistory', () => {
  it('rates the numbers used over the window, from the reading at its start to the newest', () => {
    const h = new PeriodHistory(10 * MIN);
    expect(h.takePerSecond(0)).toBe(0);
    h.record('20261128', { at: 0, used: 0n });
    expect(h.takePerSecond(0)).toBe(0);
    // A quiet start, then a rush of 10/s from minute 20.
    h.record('20261128', { at: 20 * MIN, used: 600n });
    for (let m = 21; m <= 40; m++) h.record('20261128', { at: m * MIN, used: 600n + BigInt((m - 20) * 600) });
    // Window 10 min: minutes 30..40, 6000 numbers in 600 s.
    expect(h.takePerSecond(0)).toBe(10);
  });

  it('keeps readings closer than a sixtieth of the window as one (the newest), so an hour sampled each second is ~60 readings', () => {
    const h = new PeriodHistory(60 * MIN);
    for (let s = 0; s <= 3600; s++) h.record('p', { at: s * 1000, used: BigInt(s * 5) });
    expect(h.takePerSecond(0)).toBeCloseTo(5, 6);
    const kept = (h as unknown as { samples: unknown[] }).samples.length;
    expect(kept).toBeGreaterThanOrEqual(60);
    expect(kept).toBeLessThanOrEqual(64);
  });

  it('starts over with a new period: its sequence restarts at 1, no rate across the boundary', () => {
    const h = new PeriodHistory(10 * MIN);
    h.record('20261128', { at: 0, used: 900n });
    h.record('20261128', { at: MIN, used: 960n });
    expect(h.takePerSecond(0)).toBe(1);
    h.record('20261129', { at: 2 * MIN, used: 5n });
    expect(h.takePerSecond(2 * MIN)).toBe(0);
    h.record('20261129', { at: 3 * MIN, used: 65n });
    expect(h.takePerSecond(2 * MIN)).toBe(1);
  });

  it('starts over when a reading falls below the newest (Redis restored behind it), rating from there', () => {
    const h = new PeriodHistory(10 * MIN);
    h.record('p', { at: 0, used: 900n });
    h.record('p', { at: MIN, used: 960n });
    h.record('p', { at: 2 * MIN, used: 300n });
    expect(h.takePerSecond(0)).toBe(0);
    h.record('p', { at: 3 * MIN, used: 420n });
    // 120 since the restore, the only use known, over the 3 minutes since the period began.
    expect(h.takePerSecond(0)).toBeCloseTo(120 / 180, 9);
  });

  it('spreads a burst over the window: 1,000 read a second apart, hours into the period, is 1,000 in 15 minutes', () => {
    const h = new PeriodHistory(15 * MIN);
    const noon = 12 * 60 * MIN;
    h.record('p', { at: noon, used: 0n });
    h.record('p', { at: noon + 1000, used: 1000n });
    expect(h.takePerSecond(0)).toBeCloseTo(1000 / 900, 9);
    // Early in a period, the time since it began is the window.
    expect(h.takePerSecond(noon - 9000)).toBe(100);
  });

  it('is 0 once nothing was taken for a whole window (the alarm clears)', () => {
    const h = new PeriodHistory(MIN);
    h.record('p', { at: 0, used: 0n });
    h.record('p', { at: 30_000, used: 3000n });
    expect(h.takePerSecond(0)).toBe(100);
    h.record('p', { at: 60_000, used: 3000n });
    expect(h.takePerSecond(0)).toBe(50);
    h.record('p', { at: 91_000, used: 3000n });
    expect(h.takePerSecond(0)).toBe(0);
  });
});

describe('periodForecast', () => {
  const end = Date.parse('2026-11-28T16:00:00Z');
  const now = Date.parse('2026-11-28T05:00:00Z');

  it('runs out at now + left / rate; alarms only before the period ends', () => {
    // 999,999 − 500,000 = 499,999 left at 20/s: 24,999.95 s, before the end 11 h away.
    const f = periodForecast({ now, used: 500_000n, capacity: 999_999n, period: { end } }, 20);
    expect(f.runsOutAt).toBe(now + 24_999_950);
    expect(f.beforeEnd).toBe(true);
    // At 10/s it lasts 49,999.9 s: past the end (39,600 s away).
    expect(periodForecast({ now, used: 500_000n, capacity: 999_999n, period: { end } }, 10).beforeEnd).toBe(false);
  });

  it('is never with nothing taken, and now when full', () => {
    const idle = periodForecast({ now, used: 10n, capacity: 999n, period: { end } }, 0);
    expect(idle).toEqual({ takePerSecond: 0, runsOutAt: undefined, beforeEnd: false });
    const full = periodForecast({ now, used: 999n, capacity: 999n, period: { end } }, 0);
    expect(full).toEqual({ takePerSecond: 0, runsOutAt: now, beforeEnd: true });
  });
});

describe('runOutText: the time as the zone reads it', () => {
  const at = (iso: string) => Date.parse(iso);

  it('Asia/Shanghai: 14:20 the same day there, with the date when it is another day there', () => {
    const zone = timeZone('Asia/Shanghai');
    const clock = (ms: number) => zone.wallClock(ms);
    // 05:00Z is 13:00 in Shanghai; 06:20Z is 14:20.
    expect(runOutText(clock, at('2026-11-28T05:00:00Z'), at('2026-11-28T06:20:00Z'))).toBe('14:20');
    // 17:00Z is already the 29th in Shanghai (01:00).
    expect(runOutText(clock, at('2026-11-28T05:00:00Z'), at('2026-11-28T17:00:00Z'))).toBe('2026-11-29 01:00');
  });

  it('an offset zone with minutes (-02:33)', () => {
    const zone = timeZone('-02:33');
    expect(runOutText((ms) => zone.wallClock(ms), at('2026-11-28T12:00:00Z'), at('2026-11-28T16:53:00Z'))).toBe(
      '14:20',
    );
  });

  it("New York's spring-forward day: a run-out after 02:00 reads on the summer clock (03:30, not 02:30)", () => {
    const zone = timeZone('America/New_York');
    const clock = (ms: number) => zone.wallClock(ms);
    // 2026-03-08: 01:00 EST is 06:00Z; 07:30Z is 03:30 EDT (02:00–03:00 never happens).
    expect(runOutText(clock, at('2026-03-08T06:00:00Z'), at('2026-03-08T07:30:00Z'))).toBe('03:30');
    // The day has 23 hours: its period ends at 04:00Z on the 9th (midnight EDT), not 05:00Z.
    const scheme = NumberScheme.of({ format: 'N{yyyy}{MM}{dd}{seq:4}', reset: 'daily', timeZone: 'America/New_York' });
    const period = scheme.calendar.at(at('2026-03-08T06:00:00Z'));
    expect(period.end - period.start).toBe(23 * 3600_000);
    // 22:59 EDT (02:59Z on the 9th) is before that end; a run-out at 23:30 EDT is too.
    const f = periodForecast(
      { now: at('2026-03-08T23:00:00Z'), used: 9000n, capacity: 9999n, period },
      999 / (4.5 * 3600),
    );
    expect(f.beforeEnd).toBe(true);
    expect(runOutText(clock, at('2026-03-08T23:00:00Z'), f.runsOutAt!)).toBe('23:30');
  });
});

/** Counters in memory: the SQL counter's contract (never past capacity), no database. */
class MemoryNumberCounter implements NumberCounter {
  readonly seqs = new Map<string, bigint>();

  reserve(entityKey: string, period: CounterPeriod, size: number, capacity: bigint): Promise<SeqRange | undefined> {
    const id = `${entityKey}/${period.id}`;
    const seq = this.seqs.get(id) ?? 0n;
    if (seq >= capacity) return Promise.resolve(undefined);
    const last = seq + BigInt(size) > capacity ? capacity : seq + BigInt(size);
    this.seqs.set(id, last);
    return Promise.resolve({ first: seq + 1n, last });
  }

  peek(entityKey: string, periodId: string): Promise<bigint> {
    return Promise.resolve(this.seqs.get(`${entityKey}/${periodId}`) ?? 0n);
  }

  raise(entityKey: string, period: CounterPeriod, atLeast: bigint): Promise<bigint> {
    const id = `${entityKey}/${period.id}`;
    const seq = this.seqs.get(id) ?? 0n;
    this.seqs.set(id, seq > atLeast ? seq : atLeast);
    return Promise.resolve(this.seqs.get(id)!);
  }
}

describe('the sampler on business numbers (fake clock, the process clock deciding)', () => {
  function setup() {
    // 21:00 in Shanghai: three hours of the day left.
    const clock = new FakeClock({ now: Date.parse('2026-11-28T13:00:00Z'), sleep: 'advance' });
    const inv: EntityConfig = entityConfig({
      key: 'inv',
      step: 50,
      maxSizePerTimes: 100,
      numbers: { format: 'INV{yyyy}{MM}{dd}-{seq:3}', reset: 'daily', timeZone: 'Asia/Shanghai' },
    });
    const metrics = new OpsMetrics({ defaultMetrics: false, nowMs: () => clock.now() });
    const alarms = new Alarms({ clock, log: silentLogger, alertDedupeMs: 600_000, instance: 't' });
    const counter = new MemoryNumberCounter();
    const takes = inProcessNumbers(clock, [inv], counter);
    const sampler = new OpsSampler({
      entities: { list: () => [inv], get: (key) => (key === 'inv' ? inv : undefined) },
      poolStore: { levels: async (keys) => keys.map(() => ({ size: 0, taken: 0 })) },
      demand: {
        target: () => 100,
        lowWatermark: () => 20,
        sizing: () => ({ target: 100, lowWatermark: 20, max: 100 }),
      },
      allocator: { peekMany: async () => new Map() },
      stride: new IdStride(),
      metrics,
      alarms,
      clock,
      log: silentLogger,
      ...SAMPLER_SETTINGS,
      periodRateWindowMs: 5 * MIN,
      numbers: takes.periods,
    });
    const gauge = (g: { values: Map<string, number> }) => g.values.get('inv');
    return { clock, inv, metrics, alarms, takes, sampler, gauge };
  }

  it('publishes the period, used / capacity and the forecast; alarms with the zone time, clears when the rate stops', async () => {
    const s = setup();
    const periodStart = Date.parse('2026-11-27T16:00:00Z');
    // 12 a minute for ten minutes: 120 of 999.
    for (let m = 0; m < 10; m++) {
      await s.takes.take(s.inv, 12);
      await s.sampler.sampleOnce();
      s.clock.advance(MIN);
    }
    expect(s.gauge(s.metrics.numberPeriodStart)).toBe(periodStart / 1000);
    expect(s.gauge(s.metrics.numberPeriodEnd)).toBe(periodStart / 1000 + 86_400);
    expect(s.gauge(s.metrics.numberPeriodCapacity)).toBe(999);
    expect(s.gauge(s.metrics.numberPeriodUsed)).toBe(120);
    expect(s.alarms.activeAlarms().map((a) => a.name)).toEqual(['forecast_period_exhausted']);
    const alarm = s.alarms.activeAlarms()[0];
    // Sampled at 13:09Z (21:09 in Shanghai) with 120 used, 12 a minute over the 5-minute window (0.2/s):
    // 879 left last 4,395 s, to 22:22:15 there, before midnight.
    expect(alarm.message).toBe(
      'inv: 3 digits run out at 22:22 (Asia/Shanghai), before period 20261128 ends at 2026-11-29 00:00: 120 of 999 used, 0.2/s',
    );
    expect(s.gauge(s.metrics.forecastNumberPeriod)).toBeCloseTo(4395, 6);
    const row = s.sampler.overview()[0];
    expect(row.period).toMatchObject({
      id: '20261128',
      used: '120',
      capacity: '999',
      digits: 3,
      runsOutLocal: '22:22',
      runsOutBeforeEnd: true,
      start: '2026-11-27T16:00:00.000Z',
      end: '2026-11-28T16:00:00.000Z',
    });
    expect(row.pool.size).toBe(numberPeriodJson(s.sampler.numberView('inv')!).ready);

    // Takes stop: once a whole window (5 min) has nothing taken the rate is 0 and the alarm clears.
    for (let m = 0; m < 6; m++) {
      await s.sampler.sampleOnce();
      s.clock.advance(MIN);
    }
    expect(s.alarms.activeAlarms()).toEqual([]);
    expect(s.gauge(s.metrics.forecastNumberPeriod)).toBe(Number.POSITIVE_INFINITY);
    expect(s.alarms.recent()[0]).toMatchObject({ name: 'forecast_period_exhausted', status: 'resolved' });
  });

  it("takes its take rate over a pool's window and its forecast over the period's; charts its ready numbers", async () => {
    const s = setup();
    for (let m = 0; m < 10; m++) {
      await s.takes.take(s.inv, 12);
      await s.sampler.sampleOnce();
      s.clock.advance(MIN);
    }
    // 12 a minute over the last minute: 0.2/s, as a pool's rate reads it.
    expect(s.gauge(s.metrics.takeRate)).toBeCloseTo(0.2, 6);
    // The takes stopped at 13:09: 90 s on, the take rate reads 0 as a segment entity's would, while the
    // run-out forecast keeps the rate of its longer window (a burst alone promises no run-out, a pause no rescue).
    s.clock.advance(30_000);
    await s.sampler.sampleOnce();
    expect(s.gauge(s.metrics.takeRate)).toBe(0);
    const row = s.sampler.overview()[0];
    expect(row.takePerSecond).toBe(0);
    expect(row.period!.takePerSecond).toBeGreaterThan(0);
    expect(Number.isFinite(s.gauge(s.metrics.forecastNumberPeriod)!)).toBe(true);
    // The dashboard's charts: one point a sample, the ready numbers as the pool size.
    expect(row.history).toHaveLength(11);
    expect(row.history.at(-1)).toMatchObject({ size: row.pool.size, takePerSecond: 0 });
    expect(row.history.some((p) => p.takePerSecond > 0)).toBe(true);
  });

  it('a rate that lasts the period raises nothing; the next period moves the one series back to 0 used', async () => {
    const s = setup();
    // 1 a minute: 999 would take 16 h, past midnight.
    for (let m = 0; m < 5; m++) {
      await s.takes.take(s.inv, 1);
      await s.sampler.sampleOnce();
      s.clock.advance(MIN);
    }
    expect(s.alarms.activeAlarms()).toEqual([]);
    expect(s.sampler.numberView('inv')!.forecast.beforeEnd).toBe(false);
    // Past midnight in Shanghai (16:00Z).
    s.clock.advance(Date.parse('2026-11-28T16:00:01Z') - s.clock.now());
    await s.sampler.sampleOnce();
    expect(s.gauge(s.metrics.numberPeriodUsed)).toBe(0);
    expect(s.gauge(s.metrics.numberPeriodStart)).toBe(Date.parse('2026-11-28T16:00:00Z') / 1000);
    expect(s.metrics.numberPeriodUsed.values.size).toBe(1);
    const text = (await s.metrics.render()).body;
    expect(text.match(/^idpool_number_period_used\{/gm)).toHaveLength(1);
  });

  it('keeps the alarm while the period is full, naming when the next period starts', async () => {
    const s = setup();
    await s.takes.take(s.inv, 100);
    await s.sampler.sampleOnce();
    s.clock.advance(1000);
    await s.takes.take(s.inv, 100);
    while ((await s.takes.periods.usage(s.inv)).used < 999n) await s.takes.take(s.inv, 1).catch(() => undefined);
    await s.sampler.sampleOnce();
    s.clock.advance(1000);
    await s.sampler.sampleOnce();
    expect(s.alarms.activeAlarms()[0].message).toBe(
      'inv: 3 digits ran out; period 20261128 is full until 2026-11-29 00:00 (Asia/Shanghai)',
    );
  });
});
