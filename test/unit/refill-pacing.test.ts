import { describe, expect, it } from 'vitest';
import { type EntityConfig, withDefaults } from '../../src/entities/entity';
import { systemClock } from '../../src/clock';
import { silentLogger } from '../../src/logger';
import { Demand } from '../../src/pool/demand';
import { MemoryPoolStore, MemoryRefillLock } from '../../src/pool/memory-pool-store';
import { Refiller } from '../../src/pool/refiller';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { ClusterMap } from '../../src/segment/cluster';

function app(key: string, interval: number): EntityConfig {
  return { ...withDefaults({ key, mode: 'monotonic', step: 100, maxPoolSize: 1000, maxSizePerSecond: 0, maxSizePerTimes: 500 }), interval, secretHash: '', createTime: 0, updateTime: 0 };
}

describe('refill pacing by interval', () => {
  it('checks an entity at most once per its interval, however often it is marked low', async () => {
    const store = new MemoryPoolStore(systemClock);
    const checks = new Map<string, number>();
    // A refill check reads the pool's level first.
    const levels = store.levels.bind(store);
    store.levels = async (keys: readonly string[]) => {
      for (const key of keys) checks.set(key, (checks.get(key) ?? 0) + 1);
      return levels(keys);
    };
    const entities = new Map([
      ['paced', app('paced', 400)],
      ['eager', app('eager', 10)],
    ]);
    const apps = { get: (key: string) => entities.get(key), segmentKeys: () => [] };
    const refiller = new Refiller({ apps, allocator: new FakeSegmentAllocator(), demand: new Demand({ clock: systemClock, horizonSeconds: 60 }), store, lock: new MemoryRefillLock(), cluster: new ClusterMap(), clock: systemClock, log: silentLogger, intervalMs: 10, sweepMs: 60_000 });
    refiller.start();
    const marking = setInterval(() => {
      refiller.markLow('paced');
      refiller.markLow('eager');
    }, 5);
    await new Promise((r) => setTimeout(r, 1000));
    clearInterval(marking);
    await refiller.stop();
    // 1 s at a 400 ms interval: 3 checks at most (near 0, 400 and 800 ms).
    expect(checks.get('paced')).toBeLessThanOrEqual(3);
    expect(checks.get('paced')).toBeGreaterThanOrEqual(2);
    // The 10 ms entity is checked on (nearly) every tick, even on a loaded machine.
    expect(checks.get('eager')).toBeGreaterThan(20);
  });

  it('defaults interval to the service refill tick', () => {
    expect(withDefaults({ key: 'k', mode: 'monotonic' }, 250).interval).toBe(250);
    expect(withDefaults({ key: 'k', mode: 'monotonic', interval: 1000 }, 250).interval).toBe(1000);
  });
});
