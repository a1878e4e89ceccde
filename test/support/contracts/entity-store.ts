import { expect, it } from 'vitest';
import type { EntityStore } from '../../../src/entities/entity-store';
import { entityConfig } from '../entity';

/**
 * What every {@link EntityStore} does, run against the SQL store and
 * `FakeEntityStore` alike. `make` gives a store with no entities.
 */
export function entityStoreContract(make: () => Promise<EntityStore>): void {
  it('inserts an entity once and finds it whole; a taken key is refused', async () => {
    const store = await make();
    const orders = entityConfig({
      key: 'c-orders',
      startOffset: 7n,
      delta: 3,
      remainder: 2,
      compat: ['leaf'],
      secrets: [{ id: 's1', hash: 'hash-1', createTime: 1_000, expiresAt: null }],
      createTime: 1_000,
      updateTime: 1_000,
    });
    expect(await store.insert(orders)).toBe(true);
    expect(await store.insert({ ...orders, name: 'again' })).toBe(false);
    expect(await store.findLive('c-orders')).toEqual(orders);
    expect(await store.exists('c-orders')).toBe(true);
    expect(await store.findLive('c-none')).toBeUndefined();
    expect(await store.exists('c-none')).toBe(false);
  });

  it('lists live entities in key order; a retired key stays taken and is never reused', async () => {
    const store = await make();
    for (const key of ['c-b', 'c-a', 'c-c'])
      expect(await store.insert(entityConfig({ key, createTime: 1_000, updateTime: 1_000 }))).toBe(true);
    expect(await store.retire('c-b', 2_000)).toBe(true);
    expect(await store.retire('c-b', 3_000)).toBe(false);
    expect((await store.listLive()).map((e) => e.key)).toEqual(['c-a', 'c-c']);
    expect(await store.findLive('c-b')).toBeUndefined();
    expect(await store.exists('c-b')).toBe(true);
    expect(await store.insert(entityConfig({ key: 'c-b' }))).toBe(false);
  });

  it('updates tunables and the secret hash of live entities only, stamping updateTime', async () => {
    const store = await make();
    const e = entityConfig({ key: 'c-up', createTime: 1_000, updateTime: 1_000 });
    await store.insert(e);
    const tunables = {
      name: 'renamed',
      step: 200,
      maxSizePerTimes: 300,
      maxSizePerSecond: 50,
      minSizePercent: 70,
      maxPoolSize: 2000,
      interval: 250,
      compat: ['leaf'] as const,
    };
    expect(await store.update('c-up', tunables, 2_000)).toBe(true);
    const secrets = [
      { id: 's2', hash: 'hash-2', createTime: 3_000, expiresAt: null },
      { id: 's1', hash: 'hash-1', createTime: 1_000, expiresAt: 9_000 },
    ];
    expect(await store.setSecrets('c-up', secrets, 3_000)).toBe(true);
    expect(await store.findLive('c-up')).toEqual({ ...e, ...tunables, secrets, updateTime: 3_000 });
    expect(await store.update('c-none', tunables, 2_000)).toBe(false);
    await store.retire('c-up', 4_000);
    expect(await store.update('c-up', tunables, 5_000)).toBe(false);
    expect(await store.setSecrets('c-up', secrets, 5_000)).toBe(false);
  });

  it('writes tunables and secrets only where the row is as read (`was`: its updateTime then), else changes nothing', async () => {
    const store = await make();
    const e = entityConfig({ key: 'c-was', createTime: 1_000, updateTime: 1_000 });
    await store.insert(e);
    const secrets = [{ id: 's2', hash: 'hash-2', createTime: 2_000, expiresAt: null }];
    expect(await store.setSecrets('c-was', secrets, 2_000, 1_000)).toBe(true);
    // Read at 1,000, written at 2,000 since: refused.
    expect(await store.update('c-was', { ...e, step: 7 }, 3_000, 1_000)).toBe(false);
    expect(await store.setSecrets('c-was', [], 3_000, 1_000)).toBe(false);
    expect(await store.findLive('c-was')).toEqual({ ...e, secrets, updateTime: 2_000 });
    expect(await store.update('c-was', { ...e, step: 7 }, 3_000, 2_000)).toBe(true);
    expect((await store.findLive('c-was'))?.step).toBe(7);
  });

  it('changedSince answers the rows changed at or after a time, retired ones marked', async () => {
    const store = await make();
    await store.insert(entityConfig({ key: 'c-old', createTime: 1_000, updateTime: 1_000 }));
    await store.insert(entityConfig({ key: 'c-new', createTime: 5_000, updateTime: 5_000 }));
    await store.insert(entityConfig({ key: 'c-gone', createTime: 1_000, updateTime: 1_000 }));
    await store.retire('c-gone', 6_000);
    const changed = (await store.changedSince(5_000)).map((c) => [c.entity.key, c.retired]).sort();
    expect(changed).toEqual([
      ['c-gone', true],
      ['c-new', false],
    ]);
  });
}
