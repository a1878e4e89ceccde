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

  it('when the generation cannot be read (Redis failing), a refresh decides, so a new entity still works', async () => {
    const store = fakeStore();
    const failing = { current: async (): Promise<number> => Promise.reject(new Error('Connection is closed.')), bump: async () => undefined };
    const here = new AppRegistry(store, systemClock, {}, failing);
    const there = new AppRegistry(store, systemClock, {}, failing);
    await here.load();
    await there.register({ key: 'during-outage', mode: 'monotonic' });
    expect((await here.find('during-outage'))?.key).toBe('during-outage');
    expect(await here.find('never')).toBeUndefined();
  });

  it('finds a key that a refresh added while it was reading the generation (200 concurrent first requests)', async () => {
    const store = fakeStore();
    let value = 0;
    let hold: Promise<void> | undefined;
    const generation = {
      current: async () => {
        if (hold) await hold;
        return value;
      },
      bump: async () => {
        value++;
      },
    };
    const here = new AppRegistry(store, systemClock, {}, generation);
    const there = new AppRegistry(store, systemClock, {}, generation);
    await here.load();
    await there.register({ key: 'x', mode: 'monotonic' });
    let release!: () => void;
    hold = new Promise((r) => (release = r));
    const finding = here.find('x'); // waits on the generation
    hold = undefined;
    await here.refresh(); // the periodic refresh, meanwhile, adds x and records generation 1
    release();
    expect((await finding)?.key).toBe('x');
  });
});
