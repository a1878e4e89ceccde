import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../src/entities/entity';
import { MemoryPoolStore } from '../../src/pool/memory-pool-store';
import { FakeClock, settle } from '../support/clock';
import { entityConfig } from '../support/entity';
import { testRefiller } from '../support/refiller';

describe('refill pacing by interval', () => {
  it('checks an entity at most once per its interval, however often it is marked low', async () => {
    const clock = new FakeClock();
    const store = new MemoryPoolStore(clock);
    const checks = new Map<string, number>();
    // A refill check reads the pool's level first.
    const levels = store.levels.bind(store);
    store.levels = async (keys: readonly string[]) => {
      for (const key of keys) checks.set(key, (checks.get(key) ?? 0) + 1);
      return levels(keys);
    };
    const configs = new Map([
      ['paced', entityConfig({ key: 'paced', interval: 400 })],
      ['eager', entityConfig({ key: 'eager', interval: 10 })],
    ]);
    const entities = { get: (key: string) => configs.get(key), segmentKeys: () => [] };
    const refiller = testRefiller(clock, { entities, store, sweepMs: 60_000 });
    refiller.start();
    // 1 s of fake time in 5 ms steps, both entities marked low at every step.
    for (let t = 0; t < 1000; t += 5) {
      refiller.markLow('paced');
      refiller.markLow('eager');
      clock.advance(5);
      await settle();
    }
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
