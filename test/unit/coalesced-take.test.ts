import { describe, expect, it } from 'vitest';
import { type EntityConfig, withDefaults } from '../../src/entities/entity';
import { RateLimitedError } from '../../src/errors';
import { silentLogger } from '../../src/logger';
import { loggingDispatchEvents } from '../../src/ops/observers';
import { Dispatcher } from '../../src/pool/dispatcher';
import { MemoryPoolStore } from '../../src/pool/memory-pool-store';
import type { TakeResult } from '../../src/pool/pool-store';
import type { TakenIds } from '../../src/pool/taken-ids';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { TakeService } from '../../src/take/take-service';
import { FakeClock } from '../support/clock';
import { entityMap, testDispatcher, testRefiller } from '../support/refiller';

/** The in-process store, counting the take calls that reach it. */
class CountingStore extends MemoryPoolStore {
  readonly takes: number[] = [];
  override take(entityKey: string, count: number, maxPerSecond: number): Promise<TakeResult> {
    this.takes.push(count);
    return super.take(entityKey, count, maxPerSecond);
  }
}

function entity(overrides: Partial<EntityConfig> = {}): EntityConfig {
  return {
    ...withDefaults({
      key: 'orders',
      mode: 'monotonic',
      step: 100,
      maxPoolSize: 1000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 500,
    }),
    secrets: [],
    createTime: 0,
    updateTime: 0,
    ...overrides,
  };
}

async function setup(config: EntityConfig) {
  const clock = new FakeClock({ sleep: 'advance' });
  const store = new CountingStore(clock);
  const allocator = new FakeSegmentAllocator();
  const refiller = testRefiller(clock, { entities: entityMap([config]), allocator, store, intervalMs: 100 });
  const dispatcher = testDispatcher(clock, { store, refiller, coalesce: true });
  await refiller.refill(config.key); // one floor: 500 ids, 0..499
  return { clock, store, refiller, dispatcher, takes: segmentTakes(dispatcher) };
}

/** The take service with the segment take alone, reporting to nothing. */
function segmentTakes(dispatcher: Dispatcher): TakeService {
  return new TakeService({ takers: { segment: dispatcher }, events: { served: () => undefined } });
}

/** Settles every promise: ids, or the error's class name. */
const outcomes = (ps: Promise<TakenIds>[]) =>
  Promise.all(
    ps.map((p) =>
      p.then(
        (ids) => ids.toArray().map(Number),
        (err: Error) => err.constructor.name,
      ),
    ),
  );

describe('coalesced takes', () => {
  it('takes of one turn share one store call; ids go out in arrival order, each request gets its own count', async () => {
    const config = entity();
    const { store, takes } = await setup(config);
    const counts = [3, 1, 5, 2];
    const answers = await outcomes(counts.map((n) => takes.take(config, n)));
    expect(store.takes).toEqual([11]);
    expect(answers).toEqual([[0, 1, 2], [3], [4, 5, 6, 7, 8], [9, 10]]);
    expect(takes.stats.idsServed).toBe(11);
    // The next turn is the next group.
    expect((await takes.take(config, 2)).toArray()).toEqual(['11', '12']);
    expect(store.takes).toEqual([11, 2]);
  });

  it('other entities and later turns are not mixed in', async () => {
    const config = entity();
    const other = entity({ key: 'payments' });
    const { store, takes } = await setup(config);
    await store.push('payments', ['900', '901'], 900n, 901n);
    const a = takes.take(config, 1);
    const b = takes.take(other, 1);
    const c = takes.take(config, 1);
    expect(await outcomes([a, b, c])).toEqual([[0], [900], [1]]);
    expect(store.takes.sort()).toEqual([1, 2]);
  });

  it('a shortage of the sum falls back to answering each request alone: each all or nothing, in arrival order', async () => {
    const config = entity();
    const { store, takes } = await setup(config);
    await takes.take(config, 490); // 10 left: 490..499
    store.takes.length = 0;
    const answers = await outcomes([takes.take(config, 4), takes.take(config, 4), takes.take(config, 4)]);
    // The sum (12) did not fit; the first two did, one after another; the third found 2 and waited for a refill (one floor, 500..999).
    expect(store.takes.slice(0, 4)).toEqual([12, 4, 4, 4]);
    expect(answers).toEqual([
      [490, 491, 492, 493],
      [494, 495, 496, 497],
      [498, 499, 500, 501],
    ]);
  });

  it('rate limits stay exact: the sum is admitted only when every request would be, else each is counted as itself', async () => {
    const config = entity({ maxSizePerSecond: 10 });
    const { clock, dispatcher, takes } = await setup(config);
    // 4 × 3 = 12 > 10: answered alone, the first three fit (9), the fourth is limited.
    const answers = await outcomes([0, 1, 2, 3].map(() => takes.take(config, 3)));
    expect(answers).toEqual([[0, 1, 2], [3, 4, 5], [6, 7, 8], 'RateLimitedError']);
    expect(dispatcher.stats.rateLimited).toBe(1);
    // One id left this second: a group of 1 + 1 does not fit, the first alone does.
    expect(await outcomes([takes.take(config, 1), takes.take(config, 1)])).toEqual([[9], 'RateLimitedError']);
    clock.advance(1000);
    // A new second: 5 + 5 fits exactly, in one call.
    expect(await outcomes([takes.take(config, 5), takes.take(config, 5)])).toEqual([
      [10, 11, 12, 13, 14],
      [15, 16, 17, 18, 19],
    ]);
    await expect(takes.take(config, 1)).rejects.toBeInstanceOf(RateLimitedError);
  });

  it('a failing store call fails every request of the group with its error', async () => {
    const config = entity();
    const { store, takes } = await setup(config);
    store.take = async () => {
      throw new Error('connect ECONNREFUSED');
    };
    expect(await outcomes([takes.take(config, 1), takes.take(config, 1)])).toEqual(['Error', 'Error']);
  });

  it('the in-process store does not coalesce by default (it answers without I/O)', async () => {
    const config = entity();
    const clock = new FakeClock({ sleep: 'advance' });
    const store = new CountingStore(clock);
    await store.push('orders', ['1', '2', '3'], 1n, 3n);
    const refiller = {
      touch: () => undefined,
      markLow: () => undefined,
      markReset: () => undefined,
      refill: async () => undefined,
      lastFailure: () => undefined,
      lowWatermark: () => 0,
    };
    const takes = segmentTakes(new Dispatcher({ store, refiller, clock, events: loggingDispatchEvents(silentLogger) }));
    expect(await outcomes([takes.take(config, 1), takes.take(config, 2)])).toEqual([[1], [2, 3]]);
    expect(store.takes).toEqual([1, 2]);
  });
});
