import { describe, expect, it } from 'vitest';
import { MemoryPoolStore, MemoryRefillLock } from '../../src/pool/memory-pool-store';
import { FakeClock } from '../support/clock';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { entityConfig } from '../support/entity';
import { entityMap, testRefiller } from '../support/refiller';

/** A pool store whose Redis server (epoch) the test changes, counting resets. */
class RestartingStore extends MemoryPoolStore {
  server = 'run-1';
  resets = 0;
  override async epoch(): Promise<string> {
    return this.server;
  }
  override async reset(entityKey: string, issuedUpTo: bigint): Promise<boolean> {
    this.resets++;
    await super.reset(entityKey, issuedUpTo);
    // The first claim of a pool for an epoch discards nothing.
    return this.resets > 1;
  }
}

/** A lock a restarted Redis refuses while it still loads its data. */
class LoadingLock extends MemoryRefillLock {
  refusals = 0;
  override async acquire(entityKey: string) {
    if (this.refusals > 0) {
      this.refusals--;
      return null;
    }
    return super.acquire(entityKey);
  }
}

describe('refiller: a pool discarded after a Redis server change', () => {
  it('is reset at a later sweep when the first try found the lock refused, and reported once', async () => {
    const clock = new FakeClock();
    const store = new RestartingStore(clock);
    const lock = new LoadingLock();
    const configs = new Map([['orders', entityConfig({ key: 'orders', step: 100, maxPoolSize: 1000 })]]);
    const entities = { get: (key: string) => configs.get(key), segmentKeys: () => [...configs.keys()] };
    const discarded: string[] = [];
    const changes: string[] = [];
    const events = {
      refilled: () => undefined,
      fenceRefused: () => undefined,
      databaseBehind: () => undefined,
      poolDiscarded: (key: string) => void discarded.push(key),
      epochChanged: (_from: string, to: string) => void changes.push(to),
      failed: () => undefined,
    };
    const refiller = testRefiller(clock, { entities, store, lock, intervalMs: 100, sweepMs: 1000, events });
    refiller.start();
    await clock.advanceBy(500, 50);
    expect(store.resets).toBe(1); // the first sweep claims the pool for run-1
    expect((await store.levels(['orders']))[0]).toMatchObject({ size: expect.any(Number) });

    // Restarted: INFO answers with a new run_id at once, the lock is refused for three tries.
    store.server = 'run-2';
    lock.refusals = 3;
    await clock.advanceBy(5000, 50);
    await refiller.stop();
    expect(changes).toEqual(['run-2']);
    expect(lock.refusals).toBe(0);
    expect(store.resets).toBe(2);
    expect(discarded).toEqual(['orders']);
  });

  it('an entity registered held (an import) is claimed when released, before its first push: no segment discarded', async () => {
    const clock = new FakeClock();
    // Redis's epoch marker: a pool no reset has claimed refuses every push, as idpool_push_open does.
    const claimed = new Set<string>();
    const store = new (class extends MemoryPoolStore {
      override async reset(entityKey: string, issuedUpTo: bigint): Promise<boolean> {
        claimed.add(entityKey);
        return super.reset(entityKey, issuedUpTo);
      }
      override async push(...args: Parameters<MemoryPoolStore['push']>) {
        return claimed.has(args[0]) ? super.push(...args) : { kind: 'epoch_changed' as const };
      }
    })(clock);
    const held = entityConfig({ key: 'orders', step: 100, maxPoolSize: 1000, startOffset: 3001n, held: 'importing' });
    const configs = new Map([['orders', held]]);
    const discarded: string[] = [];
    const allocator = new FakeSegmentAllocator();
    allocator.addEntity('orders', 3001n);
    const refiller = testRefiller(clock, {
      entities: entityMap(configs),
      allocator,
      store,
      intervalMs: 100,
      sweepMs: 1000,
      events: {
        refilled: () => undefined,
        fenceRefused: () => undefined,
        databaseBehind: () => undefined,
        poolDiscarded: (key: string) => void discarded.push(key),
        epochChanged: () => undefined,
        failed: () => undefined,
      },
    });
    refiller.start();
    // Registered after the first sweep claimed every pool there was (none), as a registration marks it.
    await clock.advanceBy(1500, 50);
    refiller.markReset('orders');
    await clock.advanceBy(3000, 50);
    expect(await store.size('orders')).toBe(0); // held: never filled
    // Released, then filled by the sweep (no take came first to ask for the reset).
    configs.set('orders', { ...held, held: null });
    await clock.advanceBy(3000, 50);
    await refiller.stop();
    expect(discarded).toEqual([]);
    expect(await store.next('orders')).toBe(3001n);
  });
});
