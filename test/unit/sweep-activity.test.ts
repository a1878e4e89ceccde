import { describe, expect, it } from 'vitest';
import { type EntityConfig, withDefaults } from '../../src/entities/entity';
import { silentLogger } from '../../src/logger';
import { loggingRefillEvents } from '../../src/ops/observers';
import { MemoryPoolStore } from '../../src/pool/memory-pool-store';
import type { PoolLevel } from '../../src/pool/pool-store';
import { IdStride } from '../../src/segment/stride';
import { FakeClock } from '../support/clock';
import { entityMap, testRefiller } from '../support/refiller';

/** The in-process store, recording which pools each sweep read. */
class CountingStore extends MemoryPoolStore {
  readonly reads: string[][] = [];
  override levels(keys: readonly string[]): Promise<(PoolLevel | Error)[]> {
    this.reads.push([...keys]);
    return super.levels(keys);
  }
}

describe('refill sweep: idle cost follows activity', () => {
  it('reads 200 idle pools per sweep, going round, and every pool taken from each sweep', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const store = new CountingStore(clock);
    const configs = new Map<string, EntityConfig>();
    for (let i = 0; i < 2500; i++) {
      const key = `e${String(i).padStart(4, '0')}`;
      configs.set(key, {
        ...withDefaults({
          key,
          mode: 'monotonic',
          step: 100,
          maxPoolSize: 1000,
          maxSizePerSecond: 0,
          maxSizePerTimes: 100,
        }),
        secrets: [],
        createTime: 0,
        updateTime: 0,
      });
    }
    const entities = entityMap(configs);
    const refiller = testRefiller(clock, {
      entities,
      store,
      intervalMs: 100,
      events: {
        ...loggingRefillEvents(silentLogger, entities, new IdStride()),
        levelsRead: (sizes, roundMs) => offered.push({ keys: [...sizes.keys()], roundMs }),
      },
    });
    /** What each sweep handed the ops sampler. */
    const offered: { keys: string[]; roundMs: number }[] = [];
    for (let i = 0; i < 13; i++) {
      await refiller.sweep();
      clock.advance(1000);
    }
    expect(store.reads.map((r) => r.length)).toEqual([...Array(12).fill(200), 100]);
    expect(new Set(store.reads.flat()).size).toBe(2500);
    // Each sweep hands the sizes it read to the ops sampler, which reads none of them again.
    expect(offered.map((o) => o.keys)).toEqual(store.reads);
    expect(offered.every((o) => o.roundMs === 13_000)).toBe(true);

    // e0000 is popped directly (nothing here sees it): noticed at its next read, then read every sweep.
    await store.push('e0000', ['1', '2', '3'], 1n, 3n);
    await store.take('e0000', 1, 0);
    // e2000 serves a take here: read from the next sweep on.
    refiller.touch('e2000');
    store.reads.length = 0;
    await refiller.sweep();
    await store.take('e0000', 1, 0);
    await refiller.sweep();
    expect(store.reads[0]).toHaveLength(201);
    expect(store.reads[0]).toContain('e2000');
    expect(store.reads[1]).toHaveLength(202);
    expect(store.reads[1]).toEqual(expect.arrayContaining(['e0000', 'e2000']));
    // A minute without takes: idle again.
    clock.advance(61_000);
    await refiller.sweep();
    expect(store.reads[2]).toHaveLength(200);
    expect(store.reads[2]).not.toContain('e0000');
  });
});
