import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../src/entities/entity';
import { Demand } from '../../src/pool/demand';
import { FakeClock } from '../support/clock';

// Defaults: step 1000, maxSizePerTimes 1000, maxSizePerSecond 5000, minSizePercent 80, maxPoolSize 300,000.
const orders = withDefaults({ key: 'orders', mode: 'monotonic' });

describe('pools sized by demand', () => {
  it('an entity nobody draws from holds one floor = max(step, maxSizePerTimes)', () => {
    const demand = new Demand({ clock: new FakeClock({ sleep: 'advance' }), horizonSeconds: 60 });
    expect(demand.target(orders)).toBe(1000);
    expect(demand.lowWatermark(orders)).toBe(800);
    expect(demand.target({ ...orders, step: 100, maxSizePerTimes: 5000 })).toBe(5000);
  });

  it('holds horizon × peak rate, capped at maxPoolSize', () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const demand = new Demand({ clock, horizonSeconds: 60 });
    demand.observe('orders', 0);
    clock.advance(1000);
    demand.observe('orders', 2000); // 2,000 ids/s
    expect(demand.peakRate('orders')).toBe(2000);
    expect(demand.target(orders)).toBe(120_000);
    expect(demand.lowWatermark(orders)).toBe(96_000);
    clock.advance(1000);
    demand.observe('orders', 2000 + 9000); // 9,000 ids/s: 540,000 wanted, the ceiling holds
    expect(demand.target(orders)).toBe(300_000);
  });

  it('the peak decays slowly (half-life), so a bursty entity keeps its depth for minutes', () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const demand = new Demand({ clock, horizonSeconds: 60 });
    demand.observe('orders', 0);
    clock.advance(1000);
    demand.observe('orders', 1000);
    clock.advance(300_000); // no new takes for five minutes
    demand.observe('orders', 1000);
    expect(demand.peakRate('orders')).toBeCloseTo(500, 0);
    expect(demand.target(orders)).toBe(30_000);
    clock.advance(3_600_000); // an hour later: back to its floor
    expect(demand.target(orders)).toBe(1000);
  });

  it('short intervals add up instead of each being inflated; a long idle gap is measured over at most 10 s', () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const demand = new Demand({ clock, horizonSeconds: 1 });
    demand.observe('orders', 0);
    for (let i = 1; i <= 10; i++) {
      clock.advance(10);
      demand.observe('orders', i * 10); // 1,000 ids/s in 10 ms steps
    }
    // 100 ids within 100 ms, measured over the 250 ms minimum window: 400 ids/s, not 1,000 per 10 ms step inflated.
    expect(demand.peakRate('orders')).toBeLessThanOrEqual(1000);
    const idle = new Demand({ clock, horizonSeconds: 60 });
    idle.observe('users', 0);
    clock.advance(600_000); // ten idle minutes, then a floor drained at once
    idle.observe('users', 1000);
    expect(idle.peakRate('users')).toBe(100); // 1,000 over the 10 s window: errs towards a deeper pool
  });

  it('a lower running total (the pool was reset) starts a new baseline; forget drops an entity', () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const demand = new Demand({ clock, horizonSeconds: 60 });
    demand.observe('orders', 5000);
    clock.advance(1000);
    demand.observe('orders', 10); // reset: not a negative rate
    expect(demand.peakRate('orders')).toBe(0);
    clock.advance(1000);
    demand.observe('orders', 1010);
    expect(demand.peakRate('orders')).toBe(1000);
    demand.forget('orders');
    expect(demand.target(orders)).toBe(1000);
  });
});
