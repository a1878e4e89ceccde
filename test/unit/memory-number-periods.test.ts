/**
 * Business numbers without Redis on the one engine (fake clock): the
 * dispatcher's take and the refiller's fill over the in-process numbers
 * layer. Now's period's numbers are dropped at its end, the next period's
 * first step is reserved at the lead the layer names, and the first take
 * after the boundary is served from it; a raise and a spent period.
 */
import { describe, expect, it } from 'vitest';
import { ConflictError, PeriodExhaustedError, PeriodShortError } from '../../src/errors';
import { FakeNumberCounter } from '../../src/segment/fake-number-counter';
import { LOCAL_PREFILL_LEAD_MS } from '../../src/pool/period-pools';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';
import { inProcessNumbers } from '../support/refiller';

const BOUNDARY = Date.parse('2026-11-29T00:00:00Z');

function invoices(format = 'INV{yyyy}{MM}{dd}-{seq:6}') {
  return entityConfig({
    key: 'inv',
    step: 10,
    maxSizePerTimes: 100,
    numbers: { format, reset: 'daily', timeZone: 'UTC' },
  });
}

describe('business numbers in process, on the dispatcher and the refiller', () => {
  it('drops the old period at its end; the next period staged at the lead serves the first take after the boundary', async () => {
    const clock = new FakeClock({ now: BOUNDARY - 10_000 });
    const counter = new FakeNumberCounter();
    const inv = invoices();
    const engine = inProcessNumbers(clock, [inv], counter);
    expect(await engine.take(inv, 3)).toEqual(['INV20261128-000001', 'INV20261128-000002', 'INV20261128-000003']);
    // The layer names the lead as the entity's next moment, and the entity due once it comes.
    expect(engine.periods.due(['inv'])).toEqual({ keys: [], waitMs: 10_000 - LOCAL_PREFILL_LEAD_MS });
    clock.advance(10_000 - LOCAL_PREFILL_LEAD_MS);
    expect(engine.periods.due(['inv']).keys).toEqual(['inv']);
    await engine.refiller.refill('inv');
    const next = counter.reservations.filter((r) => r.period === '20261129');
    expect(next).toEqual([{ entityKey: 'inv', period: '20261129', first: 1n, last: 10n }]);
    // Still the old day until the boundary.
    expect(await engine.take(inv, 1)).toEqual(['INV20261128-000004']);

    clock.advance(LOCAL_PREFILL_LEAD_MS);
    const reserved = counter.reservations.length;
    const first = (await engine.dispatcher.take(inv, 2)).toArray();
    // From the staged step: the old day's leftovers are gone, and nothing was reserved at the boundary.
    expect(first).toEqual(['INV20261129-000001', 'INV20261129-000002']);
    expect(counter.reservations).toHaveLength(reserved);
    const usage = await engine.periods.usage(inv);
    expect(usage.period.id).toBe('20261129');
    expect(usage.used).toBe(2n);
  });

  it('a raise below the line is a 409; above it the waiting numbers up to it go and the next follows it', async () => {
    const clock = new FakeClock({ now: BOUNDARY + 60_000 });
    const counter = new FakeNumberCounter();
    const inv = invoices();
    const engine = inProcessNumbers(clock, [inv], counter);
    expect(await engine.take(inv, 2)).toEqual(['INV20261129-000001', 'INV20261129-000002']);
    await expect(engine.periods.raise(inv, '20261129', 1n)).rejects.toBeInstanceOf(ConflictError);
    expect(await engine.periods.raise(inv, '20261129', 500n)).toBe(500n);
    expect((await engine.dispatcher.take(inv, 1)).toArray()).toEqual(['INV20261129-000501']);
  });

  it('a spent period: what remains is a period_short, then period_exhausted until the next begins', async () => {
    const clock = new FakeClock({ now: BOUNDARY + 60_000 });
    const counter = new FakeNumberCounter();
    const inv = invoices('INV{yyyy}{MM}{dd}-{seq:2}');
    const engine = inProcessNumbers(clock, [inv], counter);
    const taken: string[] = [];
    for (let i = 0; i < 9; i++) taken.push(...(await engine.take(inv, 10)));
    expect(new Set(taken).size).toBe(90);
    await expect(engine.take(inv, 10)).rejects.toBeInstanceOf(PeriodShortError);
    taken.push(...(await engine.take(inv, 9)));
    expect(taken.at(-1)).toBe('INV20261129-99');
    await expect(engine.take(inv, 1)).rejects.toBeInstanceOf(PeriodExhaustedError);
    expect(engine.exhausted).toEqual(['inv']);
  });
});
