import { describe, expect, it } from 'vitest';
import { Alarms } from '../../src/ops/alarms';
import { OpsMetrics } from '../../src/ops/metrics';
import {
  loggingDispatchEvents,
  loggingRefillEvents,
  opsDispatchEvents,
  opsRefillEvents,
} from '../../src/ops/observers';
import type { DispatchEvents } from '../../src/pool/dispatcher';
import type { RefillEvents } from '../../src/pool/refill-events';
import { IdStride } from '../../src/segment/stride';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';
import { recordingLog } from '../support/log';

/** Every alarm-raising event once, and a reset of an entity no epoch has claimed yet (nothing discarded). */
function report(refill: RefillEvents, dispatch: DispatchEvents): void {
  refill.refilled('orders', 0.01, 1, 1000);
  refill.fenceRefused('orders', 1000n, 2000n);
  refill.poolDiscarded('orders', 5000n);
  refill.poolDiscarded('fresh', 999n);
  refill.databaseBehind({
    entityKey: 'orders',
    databaseOffset: 10n,
    record: 'fence',
    recordedOffset: 20n,
    fence: 19n,
    carriedTo: 20n,
  });
  refill.epochChanged('run-1:r', 'run-2:r');
  refill.failed('orders');
  dispatch.rateLimited('orders');
  dispatch.refused('orders');
  dispatch.exhausted('orders', 7);
  dispatch.periodExhausted('orders', 6, Date.UTC(2026, 10, 29));
}

describe('events: the ops implementation and the logging one write the same lines', () => {
  it('each alarm once, in one wording, whichever implementation is wired', () => {
    const clock = new FakeClock();
    const configs = new Map([
      ['orders', entityConfig({ key: 'orders' })],
      ['fresh', entityConfig({ key: 'fresh', startOffset: 1000n })],
    ]);
    const entities = { get: (key: string) => configs.get(key) };
    const stride = new IdStride();

    const viaAlarms = recordingLog();
    const metrics = new OpsMetrics({ defaultMetrics: false, nowMs: () => clock.now() });
    const alarms = new Alarms({ clock, log: viaAlarms.log, alertDedupeMs: 60_000, instance: 't' });
    report(
      opsRefillEvents(metrics, alarms, entities, stride),
      opsDispatchEvents(metrics, alarms, () => undefined),
    );

    const logged = recordingLog();
    report(loggingRefillEvents(logged.log, entities, stride), loggingDispatchEvents(logged.log));

    expect(logged.lines).toEqual(viaAlarms.lines);
    expect(logged.lines.map((l) => [l.level, l.obj.alarm, l.obj.alias])).toEqual([
      ['warn', 'fence_refused', undefined],
      ['warn', 'pool_discarded', undefined],
      ['error', 'database_behind', undefined],
      ['error', 'redis_epoch_changed', 'redis_server_changed'],
      ['error', 'pool_exhausted', undefined],
      ['error', 'period_exhausted', undefined],
    ]);
    expect(logged.lines[0].msg).toBe(
      'segment [1000, 2000) of orders refused by the fence (a newer one was pushed); dropped',
    );
  });
});
