import { describe, expect, it } from 'vitest';
import { secretMatches } from '../../src/entities/entity';
import { FakeEntityStore } from '../../src/entities/fake-entity-store';
import { EntityRegistry, LocalRegistrationGeneration } from '../../src/entities/registry';
import { type Clock, systemClock } from '../../src/clock';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../src/errors';

function clockAt(start: number): Clock & { advance(ms: number): void } {
  let t = start;
  return { now: () => t, monotonic: () => t, sleep: async () => undefined, advance: (ms) => void (t += ms) };
}

describe('entity registry over the fake store (no I/O)', () => {
  it('registers with defaults, keeps the secret only as a hash, tells subscribers', async () => {
    const store = new FakeEntityStore();
    const registry = new EntityRegistry(store, clockAt(1_000_000));
    const seen: string[] = [];
    registry.subscribe({ onRegistered: (app) => void seen.push(`+${app.key}`), onRetired: (key) => void seen.push(`-${key}`) });
    const { app, secret } = await registry.register({ key: 'orders', mode: 'monotonic' });
    expect(app).toMatchObject({ key: 'orders', step: 1000, maxSizePerTimes: 1000, maxSizePerSecond: 5000, minSizePercent: 80 });
    expect(app.secretHash).not.toContain(secret);
    expect(secretMatches(secret, app.secretHash)).toBe(true);
    await registry.retire('orders');
    expect(seen).toEqual(['+orders', '-orders']);
    expect(registry.get('orders')).toBeUndefined();
  });

  it('a retired key is never registered again; bad rules change nothing', async () => {
    const store = new FakeEntityStore();
    const registry = new EntityRegistry(store, clockAt(1_000_000));
    await registry.register({ key: 'users', mode: 'monotonic' });
    await registry.retire('users');
    await expect(registry.register({ key: 'users', mode: 'monotonic' })).rejects.toBeInstanceOf(ConflictError);
    await expect(registry.register({ key: 'bad', mode: 'monotonic', step: 1000, maxPoolSize: 1000, minSizePercent: 50 })).rejects.toBeInstanceOf(InvalidRequestError);
    expect(await store.exists('bad')).toBe(false);
    await expect(registry.update('nobody', { step: 10 })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refresh picks up changes made through another instance', async () => {
    const store = new FakeEntityStore();
    const clock = clockAt(1_000_000);
    const here = new EntityRegistry(store, clock);
    const there = new EntityRegistry(store, clock);
    await here.load();
    expect(await here.find('late')).toBeUndefined();
    clock.advance(10);
    await there.register({ key: 'late', mode: 'trend' });
    await here.refresh();
    expect(here.get('late')?.mode).toBe('trend');
    await there.update('late', { step: 500 });
    clock.advance(10);
    await here.refresh();
    expect(here.get('late')?.step).toBe(500);
  });
});

describe('EntityRegistry lookups of unknown keys', () => {
  it('answers 10,000 unknown keys from the cache while no entity was registered', async () => {
    const store = new FakeEntityStore();
    const registry = new EntityRegistry(store, systemClock);
    await registry.load();
    for (let i = 0; i < 10_000; i++) expect(await registry.find(`probe-${i}`)).toBeUndefined();
    expect(store.calls).toEqual({ listLive: 1 }); // one load, no lookup per unknown key
  });

  it('refreshes once when another instance registered (the shared generation moved), then finds the entity', async () => {
    const store = new FakeEntityStore();
    const generation = new LocalRegistrationGeneration(); // stands for the counter in Redis
    const here = new EntityRegistry(store, systemClock, generation);
    const there = new EntityRegistry(store, systemClock, generation);
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
    const store = new FakeEntityStore();
    const failing = { current: async (): Promise<number> => Promise.reject(new Error('Connection is closed.')), bump: async () => undefined };
    const here = new EntityRegistry(store, systemClock, failing);
    const there = new EntityRegistry(store, systemClock, failing);
    await here.load();
    await there.register({ key: 'during-outage', mode: 'monotonic' });
    expect((await here.find('during-outage'))?.key).toBe('during-outage');
    expect(await here.find('never')).toBeUndefined();
  });

  it('finds a key that a refresh added while it was reading the generation (200 concurrent first requests)', async () => {
    const store = new FakeEntityStore();
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
    const here = new EntityRegistry(store, systemClock, generation);
    const there = new EntityRegistry(store, systemClock, generation);
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
