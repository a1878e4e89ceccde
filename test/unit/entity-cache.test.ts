import { describe, expect, it } from 'vitest';
import { EntityCache } from '../../src/entities/entity-cache';
import { FakeEntityStore } from '../../src/entities/fake-entity-store';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';

async function cacheOver(keys: string[]) {
  const store = new FakeEntityStore();
  const clock = new FakeClock({ now: 1_000_000 });
  for (const key of keys) await store.insert(entityConfig({ key, updateTime: clock.now() }));
  const told: string[] = [];
  const cache = new EntityCache(store, clock, {
    onRegistered: (entity) => void told.push(`+${entity.key}`),
    onRetired: (key) => void told.push(`-${key}`),
  });
  await cache.loadAll();
  return { store, clock, cache, told };
}

describe('EntityCache', () => {
  it('pages in key order from after any key, present or not, and sees keys added and forgotten', async () => {
    const { cache } = await cacheOver(['m', 'b', 'x', 'a', 'q']);
    const keys = (page: ReturnType<EntityCache['page']>) => page.entities.map((e) => e.key);
    expect(keys(cache.page(undefined, 2))).toEqual(['a', 'b']);
    expect(cache.page(undefined, 2).next).toBe('b');
    expect(keys(cache.page('b', 2))).toEqual(['m', 'q']);
    expect(keys(cache.page('c', 10))).toEqual(['m', 'q', 'x']); // `c` is no key: the first after it
    expect(cache.page('c', 10).next).toBeNull();
    expect(cache.page('x', 10)).toEqual({ entities: [], next: null });
    cache.remember(entityConfig({ key: 'c' }));
    cache.forget('q');
    expect(cache.list().map((e) => e.key)).toEqual(['a', 'b', 'c', 'm', 'x']);
    expect(cache.count()).toBe(5);
  });

  it('a pull sees rows changed by an instance whose clock is up to 5 s behind, and tells of registrations and retirements once', async () => {
    const { store, clock, cache, told } = await cacheOver(['orders', 'gone']);
    clock.advance(60_000);
    await cache.pullChanges();
    const behind = clock.now() - 4_000;
    await store.update('orders', { ...entityConfig(), step: 50 }, behind);
    await store.insert(entityConfig({ key: 'late', updateTime: behind }));
    await store.retire('gone', behind);
    clock.advance(100);
    await cache.pullChanges();
    expect(cache.get('orders')?.step).toBe(50);
    expect([...told].sort()).toEqual(['+late', '-gone']);
    await cache.pullChanges();
    expect([...told].sort()).toEqual(['+late', '-gone']);
    expect(cache.segmentKeys().sort()).toEqual(['late', 'orders']);
    // Further behind than the margin: missed (a clock that far off is out of bounds).
    await store.update('orders', { ...entityConfig(), step: 20 }, clock.now() - 6_000);
    await cache.pullChanges();
    expect(cache.get('orders')?.step).toBe(50);
  });

  it('a pull whose query ran while this process wrote an entity leaves the write cached, and the next pull reads its row', async () => {
    const { store, clock } = await cacheOver(['orders']);
    clock.advance(1000);
    const older = await store.changedSince(0);
    // The pull's query answers with the row from before the write made while it ran.
    const slow = Object.create(store) as FakeEntityStore;
    let written: (() => Promise<void>) | undefined;
    slow.changedSince = async () => {
      await written?.();
      return older;
    };
    const racing = new EntityCache(slow, clock, { onRegistered: () => undefined, onRetired: () => undefined });
    await racing.loadAll();
    const step = (key: string) => racing.get(key)?.step;
    written = async () => {
      const next = { ...racing.get('orders')!, step: 77, updateTime: clock.now() };
      await store.update('orders', next, next.updateTime);
      racing.written(next);
    };
    await racing.pullChanges();
    expect(step('orders')).toBe(77);
    written = undefined;
    slow.changedSince = (since) => store.changedSince(since);
    await racing.pullChanges();
    expect(step('orders')).toBe(77);
  });
});
