import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger';
import { loggingRefillEvents } from '../../src/ops/observers';
import { Demand } from '../../src/pool/demand';
import { MemoryPoolStore, MemoryRefillLock } from '../../src/pool/memory-pool-store';
import type { PeriodPools } from '../../src/pool/period-pools';
import { Refiller } from '../../src/pool/refiller';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { IdStride } from '../../src/segment/stride';
import { FakeClock, settle } from '../support/clock';
import { entityConfig } from '../support/entity';
import { sleep } from '../support/wait';

/** A refiller whose numbers layer records each fill, and holds the first until `letGo`. */
function refillerWithPeriods(clock: FakeClock, keys: string[], due: PeriodPools['due'], holdFirst = true) {
  const configs = new Map(
    keys.map((key) => [
      key,
      entityConfig({ key, numbers: { format: 'INV{yyyy}{MM}{dd}-{seq:6}', reset: 'daily', timeZone: 'UTC' } }),
    ]),
  );
  const entities = { get: (key: string) => configs.get(key), segmentKeys: () => [], numberKeys: () => keys };
  const filled: { key: string; need: number; max: number }[] = [];
  let letGo: () => void = () => undefined;
  const periods: PeriodPools = {
    cap: () => 10_000,
    async fill(entity, need, sizing) {
      filled.push({ key: entity.key, need, max: sizing.max });
      if (holdFirst && filled.length === 1) await new Promise<void>((resolve) => (letGo = resolve));
    },
    afterShort: () => Promise.resolve(false),
    due,
  };
  const refiller = new Refiller({
    entities,
    periods,
    allocator: new FakeSegmentAllocator(),
    demand: new Demand({ clock, horizonSeconds: 60 }),
    store: new MemoryPoolStore(clock),
    lock: new MemoryRefillLock(),
    stride: new IdStride(),
    clock,
    log: silentLogger,
    intervalMs: 10,
    sweepMs: 60_000,
    events: loggingRefillEvents(silentLogger, entities, new IdStride()),
  });
  return { refiller, filled, letGo: () => letGo() };
}

describe('business-number pools on the refiller', () => {
  it('fills the entities the numbers layer says are due, within its cap; stop() waits for a fill under way and none starts after', async () => {
    const clock = new FakeClock();
    const keys = ['first', 'second'];
    let asked = 0;
    const { refiller, filled, letGo } = refillerWithPeriods(clock, keys, (all) => {
      asked++;
      return { keys: asked === 1 ? [...all] : [], waitMs: 60_000 };
    });
    refiller.start();
    for (let t = 0; t < 100 && filled.length < 2; t++) {
      clock.advance(10);
      await settle();
    }
    // The pool's figures are the demand's within the layer's cap.
    expect(filled.every((f) => f.max <= 10_000)).toBe(true);
    expect(filled.map((f) => f.key).sort()).toEqual(keys);

    let stopped = false;
    const stopping = refiller.stop().then(() => void (stopped = true));
    await sleep(20);
    expect(stopped).toBe(false);
    letGo();
    await stopping;
    refiller.markLow('first');
    clock.advance(1000);
    await settle();
    expect(filled).toHaveLength(2);
  });

  it('wakes for the next moment the numbers layer names (a boundary, a lead), with nothing marked low', async () => {
    const clock = new FakeClock();
    let dueAt = clock.monotonic() + 5_000;
    const { refiller, filled } = refillerWithPeriods(
      clock,
      ['bills'],
      (all) => {
        const now = clock.monotonic();
        if (now < dueAt) return { keys: [], waitMs: dueAt - now };
        dueAt = Infinity;
        return { keys: [...all], waitMs: 60_000 };
      },
      false,
    );
    const advance = async (ms: number) => {
      for (let t = 0; t < ms; t += 100) {
        clock.advance(100);
        await settle();
      }
    };
    refiller.start();
    // The start claims every pool (its first sweep): one fill, then none until the moment named.
    await advance(4_000);
    expect(filled).toHaveLength(1);
    await advance(2_000);
    expect(filled).toHaveLength(2);
    await refiller.stop();
  });
});
