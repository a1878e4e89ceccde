import { Gauge } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RecentServed, busiest } from '../../src/ops/busiest';
import { OpsMetrics } from '../../src/ops/metrics';
import { FakeClock } from '../support/clock';

/** Distinct `entity` label values in a Prometheus text. */
function entities(text: string): Set<string> {
  return new Set([...text.matchAll(/entity="([^"]*)"/g)].map((m) => m[1]));
}

/** The value of one unlabelled series. */
function value(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`${name} not in output`);
  return Number(m[1]);
}

describe('/metrics per-entity series are capped to the busiest entities, with totals for all', () => {
  it('shows at most maxEntities entities, the busiest first, and totals over every entity', async () => {
    let recent = new Map<string, number>();
    const metrics = new OpsMetrics({ defaultMetrics: false, metricsMaxEntities: 3, recentServed: () => recent });
    for (let i = 0; i < 50; i++) {
      const entity = `e${String(i).padStart(2, '0')}`;
      metrics.poolSize.set({ entity }, 100);
      metrics.poolMax.set({ entity }, 1000);
      metrics.forecastPoolDry.set({ entity }, 1000 - i);
      metrics.idsServed.inc({ entity }, i);
      metrics.refillDuration.observe(0.003);
    }
    recent = new Map([
      ['e40', 500],
      ['e07', 20],
      ['e30', 90],
      ['e31', 1],
    ]);
    // The deployment-wide take rate counts too (traffic through other instances).
    metrics.takeRate.set({ entity: 'e05' }, 60);

    let text = (await metrics.render()).body;
    expect(entities(text)).toEqual(new Set(['e40', 'e30', 'e05']));
    expect(value(text, 'idpool_all_ids_served_total')).toBe((49 * 50) / 2);
    expect(value(text, 'idpool_all_pool_size')).toBe(50 * 100);
    expect(value(text, 'idpool_all_pool_max')).toBe(50 * 1000);
    expect(value(text, 'idpool_all_forecast_pool_dry_seconds')).toBe(1000 - 49);
    // One refill-duration histogram for every entity (per entity it was 14 series each).
    expect(text).toMatch(/^idpool_refill_duration_seconds_count 50$/m);
    expect(text).toMatch(/^idpool_refill_duration_seconds_bucket\{le="0.005"\} 50$/m);
    // Offsets and watermarks have no total.
    expect(text).not.toContain('idpool_all_current_offset');
    expect(text).toMatch(/^# TYPE idpool_all_ids_served_total counter$/m);

    // e40 goes quiet: its series leave, the next busiest take its place; its count stays in the total.
    recent = new Map([
      ['e07', 20],
      ['e30', 90],
      ['e31', 1],
    ]);
    text = (await metrics.render()).body;
    expect(entities(text)).toEqual(new Set(['e30', 'e05', 'e07']));
    expect(value(text, 'idpool_all_ids_served_total')).toBe((49 * 50) / 2);
    expect(text).toMatch(/^idpool_ids_served_total\{entity="e07"\} 7$/m);
  });

  it('fills the room left by busy entities with idle ones in key order, and shows all when under the cap', async () => {
    const metrics = new OpsMetrics({
      defaultMetrics: false,
      metricsMaxEntities: 4,
      recentServed: () => new Map([['z', 1]]),
    });
    // A family added later with an `entity` label is capped as well.
    const later = new Gauge({
      name: 'idpool_later',
      help: 'added later',
      labelNames: ['entity'],
      registers: [metrics.registry],
    });
    for (const entity of ['d', 'a', 'z', 'c', 'b']) {
      metrics.poolSize.set({ entity }, 1);
      later.set({ entity }, 1);
    }
    expect(entities((await metrics.render()).body)).toEqual(new Set(['z', 'a', 'b', 'c']));
    expect(busiest(10, ['b', 'a'])).toEqual(new Set(['a', 'b']));
    expect(busiest(0, ['b', 'a'], new Map([['a', 5]]))).toEqual(new Set());
  });

  it('ranks by ids served within the window only', () => {
    const clock = new FakeClock({ now: 1_000_000 });
    const recent = new RecentServed(clock, 60_000);
    recent.add('old', 6000);
    clock.advance(30_000);
    recent.add('new', 600);
    expect(recent.rates()).toEqual(
      new Map([
        ['old', 100],
        ['new', 10],
      ]),
    );
    clock.advance(31_000);
    expect(recent.rates()).toEqual(new Map([['new', 10]]));
    clock.advance(60_000);
    expect(recent.rates().size).toBe(0);
  });
});
