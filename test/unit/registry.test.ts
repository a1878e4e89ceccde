import { describe, expect, it } from 'vitest';
import type { AppConfig } from '../../src/apps/app';
import { AppRegistry, LocalRegistrationGeneration } from '../../src/apps/registry';
import { systemClock } from '../../src/clock';

/** An application table in memory that counts the statements it answers. */
function fakeStore() {
  const rows = new Map<string, AppConfig>();
  const calls = { listLive: 0, changedSince: 0 };
  return {
    rows,
    calls,
    async listLive() {
      calls.listLive++;
      return [...rows.values()];
    },
    async changedSince() {
      calls.changedSince++;
      return [...rows.values()].map((app) => ({ app, retired: false }));
    },
    async insert(app: AppConfig) {
      if (rows.has(app.key)) return false;
      rows.set(app.key, app);
      return true;
    },
    update: async () => true,
    setSecretHash: async () => true,
    retire: async () => true,
  };
}

describe('AppRegistry lookups of unknown keys', () => {
  it('answers 10,000 unknown keys from the cache while no entity was registered', async () => {
    const store = fakeStore();
    const registry = new AppRegistry(store, systemClock);
    await registry.load();
    for (let i = 0; i < 10_000; i++) expect(await registry.find(`probe-${i}`)).toBeUndefined();
    expect(store.calls).toEqual({ listLive: 1, changedSince: 0 });
  });

  it('refreshes once when another instance registered (the shared generation moved), then finds the entity', async () => {
    const store = fakeStore();
    const generation = new LocalRegistrationGeneration(); // stands for the counter in Redis
    const here = new AppRegistry(store, systemClock, {}, generation);
    const there = new AppRegistry(store, systemClock, {}, generation);
    await here.load();
    await there.load();
    expect(await here.find('late')).toBeUndefined();
    await there.register({ key: 'late', mode: 'monotonic' });
    const found = await Promise.all(Array.from({ length: 50 }, () => here.find('late')));
    expect(found.every((app) => app?.key === 'late')).toBe(true);
    expect(store.calls.changedSince).toBe(1);
    for (let i = 0; i < 1000; i++) await here.find(`probe-${i}`);
    expect(store.calls.changedSince).toBe(1);
  });
});
