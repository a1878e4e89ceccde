import { describe, expect, it } from 'vitest';
import type { EntityConfig } from '../../src/entities/entity';
import { checkRules, withDefaults } from '../../src/entities/entity';
import { PoolExhaustedError, RateLimitedError } from '../../src/errors';
import { loggingDispatchEvents } from '../../src/ops/observers';
import { Demand } from '../../src/pool/demand';
import { MemoryPoolStore, MemoryRefillLock } from '../../src/pool/memory-pool-store';
import type { RefillLock } from '../../src/pool/pool-store';
import { IdStride } from '../../src/segment/stride';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { FakeClock } from '../support/clock';
import { recordingLog } from '../support/log';
import { entityConfig } from '../support/entity';
import { entityMap, testDispatcher, testRefiller } from '../support/refiller';
import { takenArray } from '../support/taken';

const entity = entityConfig;

function setup(config: EntityConfig, stride = new IdStride()) {
  const clock = new FakeClock({ sleep: 'advance' });
  const store = new MemoryPoolStore(clock);
  const allocator = new FakeSegmentAllocator();
  const demand = new Demand({ clock, horizonSeconds: 60 });
  const refiller = testRefiller(clock, {
    entities: entityMap([config]),
    allocator,
    store,
    stride,
    intervalMs: 100,
    demand,
  });
  const dispatcher = testDispatcher(clock, { store, refiller });
  return { clock, store, allocator, refiller, dispatcher, demand };
}

describe('registration rules', () => {
  it('fills defaults from docs/design.md and keeps the pool rule', () => {
    const d = withDefaults({ key: 'k', mode: 'monotonic' });
    expect(d).toMatchObject({
      step: 1000,
      maxSizePerTimes: 1000,
      maxSizePerSecond: 5000,
      minSizePercent: 80,
      maxPoolSize: 300_000,
      startOffset: 0n,
    });
    expect(checkRules(d)).toBeNull();
    // A default pool is raised until a whole step fits above the watermark.
    const big = withDefaults({ key: 'k', mode: 'monotonic', step: 100_000, maxSizePerSecond: 1000 });
    expect(big.maxPoolSize).toBe(500_000);
    expect(checkRules(big)).toBeNull();
  });

  it('names the broken rule', () => {
    expect(checkRules({ ...withDefaults({ key: 'k', mode: 'monotonic' }), step: 1000, maxPoolSize: 4000 })).toMatch(
      /at least step/,
    );
    expect(
      checkRules({
        ...withDefaults({ key: 'k', mode: 'monotonic' }),
        step: 100,
        maxPoolSize: 500,
        maxSizePerTimes: 1000,
      }),
    ).toMatch(/maxSizePerTimes/);
    expect(
      checkRules({ ...withDefaults({ key: 'k', mode: 'monotonic' }), maxSizePerSecond: 10, maxSizePerTimes: 100 }),
    ).toMatch(/maxSizePerSecond/);
  });
});

describe('refiller on the in-process pool', () => {
  it('an idle entity holds one floor; demand raises the target in whole steps up to maxPoolSize, refilling only below the watermark', async () => {
    const { store, allocator, refiller, clock, demand } = setup(entity());
    await refiller.refill('orders');
    // floor = max(step 100, maxSizePerTimes 500): one reservation of 5 steps.
    expect(allocator.reservations).toMatchObject([{ start: 0n, end: 500n }]);
    expect(await store.size('orders')).toBe(500);
    await refiller.refill('orders'); // at its target: nothing reserved
    expect(allocator.reservations).toHaveLength(1);
    clock.advance(1000);
    await store.take('orders', 200, 0); // 300 left, below the 400 watermark, after 200 ids in a second
    await refiller.refill('orders');
    // 200 ids/s × 60 s = 12,000, capped at maxPoolSize 1,000: floor((1000 − 300) / 100) steps.
    expect(demand.target(entity())).toBe(1000);
    expect(allocator.reservations[1]).toMatchObject({ start: 500n, end: 1200n });
    expect(await store.size('orders')).toBe(1000);
  });

  it('shuffles each step of a trend entity and keeps steps in order', async () => {
    const { store, refiller } = setup(entity({ mode: 'trend', maxSizePerTimes: 1000 }));
    await refiller.refill('orders');
    const ids = takenArray(await store.take('orders', 1000, 0));
    for (let s = 0; s < 10; s++) {
      const part = ids.slice(s * 100, s * 100 + 100).map(Number);
      expect([...part].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => s * 100 + i));
      expect(part).not.toEqual([...part].sort((a, b) => a - b));
    }
  });

  it('maps numbers to disjoint ids for each stride index', async () => {
    const a = setup(entity(), new IdStride(3, 1));
    await a.refiller.refill('orders');
    const ids = takenArray(await a.store.take('orders', 5, 0));
    expect(ids).toEqual(['1', '4', '7', '10', '13']);
  });

  it("spaces an entity's ids by its delta and remainder, composed with the stride", async () => {
    // Alone: the numbers ≡ 2 (mod 5) from the start offset on.
    const alone = setup(entity({ delta: 5, remainder: 2, startOffset: 10n }));
    alone.allocator.addEntity('orders', 10n);
    await alone.refiller.refill('orders');
    expect(takenArray(await alone.store.take('orders', 4, 0))).toEqual(['52', '57', '62', '67']);
    // Stride 3 index 1 over delta 5 remainder 2: (n·3 + 1)·5 + 2, still ≡ 2 (mod 5), disjoint per index.
    const seen = new Set<string>();
    for (const index of [0, 1, 2]) {
      const s = setup(entity({ delta: 5, remainder: 2 }), new IdStride(3, index));
      await s.refiller.refill('orders');
      const ids = takenArray(await s.store.take('orders', 50, 0));
      if (index === 1) expect(ids.slice(0, 3)).toEqual(['7', '22', '37']);
      for (const id of ids) {
        expect(BigInt(id) % 5n).toBe(2n);
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
    }
  });

  it('a push below the fence is refused and dropped', async () => {
    const { store } = setup(entity());
    expect(await store.push('orders', ['10', '11'], 10n, 11n)).toEqual({ kind: 'ok', size: 2 });
    expect(await store.push('orders', ['5'], 5n, 5n)).toEqual({ kind: 'fenced' });
    expect(await store.size('orders')).toBe(2);
  });

  it('a failing database is survived: nothing is pushed, the next refill works', async () => {
    const { store, allocator, refiller } = setup(entity());
    allocator.failWith = new Error('connect ECONNREFUSED');
    await refiller.refill('orders');
    expect(await store.size('orders')).toBe(0);
    allocator.failWith = undefined;
    await refiller.refill('orders');
    expect(await store.size('orders')).toBe(500); // one floor: nobody has taken anything yet
  });
});

describe('dispatcher', () => {
  it('takes all or nothing and marks the pool low', async () => {
    const config = entity();
    const { store, refiller, dispatcher } = setup(config);
    await refiller.refill('orders');
    const taken = await dispatcher.take(config, 500);
    expect(taken.toArray().map(Number)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(await store.size('orders')).toBeLessThan(refiller.lowWatermark(config));
  });

  it('refills at once on shortage and serves, or answers 503 after its bounded wait', async () => {
    const config = entity();
    const { allocator, dispatcher } = setup(config);
    expect(await dispatcher.take(config, 10)).toHaveLength(10); // empty pool: refilled on demand (one floor, 500)
    allocator.failWith = new Error('connect ECONNREFUSED');
    await dispatcher.take(config, 490);
    // The refill failed: the database's error is the answer (→ 503 unavailable), not "exhausted".
    await expect(dispatcher.take(config, 1)).rejects.toThrow(/ECONNREFUSED/);
    allocator.failWith = undefined;
    expect(await dispatcher.take(config, 1)).toHaveLength(1);
  });

  it('answers pool_exhausted when the refill does not come in time (another instance holds the lock)', async () => {
    const config = entity();
    const { store, allocator, clock, stride } = { ...setup(config), stride: new IdStride() };
    const lock: RefillLock = new MemoryRefillLock();
    await lock.acquire('orders');
    const refiller = testRefiller(clock, {
      entities: entityMap([config]),
      allocator,
      store,
      lock,
      stride,
      intervalMs: 100,
    });
    const { log, lines } = recordingLog();
    const dispatcher = testDispatcher(clock, { store, refiller, events: loggingDispatchEvents(log) });
    await expect(dispatcher.take(config, 1)).rejects.toBeInstanceOf(PoolExhaustedError);
    expect(dispatcher.stats.exhausted).toBe(1);
    // Without the ops side the alarm is its log line alone, in the words the ops side raises it with.
    expect(lines).toEqual([
      {
        level: 'error',
        obj: { alarm: 'pool_exhausted', severity: 'critical', entityKey: 'orders', count: 1 },
        msg: 'pool of orders exhausted: a request for 1 ids found too few after waiting for a refill',
      },
    ]);
  });

  it('enforces max ids per second and says when to retry', async () => {
    const config = entity({ maxSizePerSecond: 600 });
    const { clock, refiller, dispatcher } = setup(config);
    await refiller.refill('orders');
    await dispatcher.take(config, 500);
    clock.advance(10);
    const err = await dispatcher.take(config, 200).catch((e) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.retryAfterSeconds).toBe(1);
    clock.advance(1000);
    expect(await dispatcher.take(config, 200)).toHaveLength(200);
  });
});
