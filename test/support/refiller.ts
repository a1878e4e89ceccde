import type { Clock } from '../../src/clock';
import type { EntityConfig } from '../../src/entities/entity';
import { silentLogger } from '../../src/logger';
import { loggingDispatchEvents, loggingRefillEvents } from '../../src/ops/observers';
import { Dispatcher, type DispatcherOptions } from '../../src/pool/dispatcher';
import { MemoryNumberStore } from '../../src/pool/memory-number-store';
import { MemoryPoolStore, MemoryRefillLock } from '../../src/pool/memory-pool-store';
import { Demand } from '../../src/pool/demand';
import { NumberPeriods } from '../../src/pool/period-pools';
import { Refiller, type RefillerOptions } from '../../src/pool/refiller';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import type { NumberCounter } from '../../src/segment/number-counter';
import { IdStride } from '../../src/segment/stride';

/** The entities port over `configs` (a map, or a list by key): every one a segment entity. */
export function entityMap(configs: Map<string, EntityConfig> | readonly EntityConfig[]) {
  const map = configs instanceof Map ? configs : new Map(configs.map((c) => [c.key, c]));
  return { get: (key: string) => map.get(key), segmentKeys: () => [...map.keys()] };
}

/**
 * A refiller as the unit tests build one: a fake segment allocator, the
 * demand over a minute of `clock`, no stride, an in-process lock, the
 * logging events, a 10 ms tick; `options` name the rest and override these.
 */
export function testRefiller(
  clock: Clock,
  options: Pick<RefillerOptions, 'entities' | 'store'> & Partial<RefillerOptions>,
): Refiller {
  return new Refiller({
    allocator: new FakeSegmentAllocator(),
    demand: new Demand({ clock, horizonSeconds: 60 }),
    stride: new IdStride(),
    lock: new MemoryRefillLock(),
    events: loggingRefillEvents(silentLogger, options.entities, options.stride ?? new IdStride()),
    clock,
    log: silentLogger,
    intervalMs: 10,
    ...options,
  });
}

/** A dispatcher over `refiller` as the unit tests build one: logging events, a 100 ms shortage wait; `options` override. */
export function testDispatcher(
  clock: Clock,
  options: Pick<DispatcherOptions, 'store' | 'refiller'> & Partial<DispatcherOptions>,
): Dispatcher {
  return new Dispatcher({ clock, shortageWaitMs: 100, events: loggingDispatchEvents(silentLogger), ...options });
}

/**
 * The embedded service's number take on a fake clock: the dispatcher and
 * the refiller over the in-process numbers layer. `take` refills first, as
 * the refiller's tick would have, so the dispatcher's shortage wait never
 * moves a clock that advances as it sleeps.
 */
export function inProcessNumbers(clock: Clock, configs: readonly EntityConfig[], counter: NumberCounter) {
  const entities = {
    get: (key: string) => configs.find((e) => e.key === key),
    segmentKeys: () => [],
    numberKeys: () => configs.map((e) => e.key),
  };
  const store = new MemoryPoolStore(clock);
  const lock = new MemoryRefillLock();
  const exhausted: string[] = [];
  const events = {
    rateLimited: () => undefined,
    refused: () => undefined,
    exhausted: () => undefined,
    periodExhausted: (key: string) => void exhausted.push(key),
  };
  const numberStore = new MemoryNumberStore(store, counter, clock);
  const periods = new NumberPeriods({
    store: numberStore,
    counter,
    lock,
    events,
    clock,
    log: silentLogger,
    retryMs: 10,
  });
  const refillEvents = loggingRefillEvents(silentLogger, entities, new IdStride());
  const refiller = testRefiller(clock, { entities, periods, store, lock, events: refillEvents });
  const dispatcher = new Dispatcher({ store, refiller, periods, clock, events });
  return {
    periods,
    refiller,
    dispatcher,
    exhausted,
    take: async (entity: EntityConfig, count: number) => {
      await refiller.refill(entity.key, count);
      return (await dispatcher.take(entity, count)).toArray();
    },
  };
}
