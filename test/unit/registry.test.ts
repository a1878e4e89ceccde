import { describe, expect, it } from 'vitest';
import { registerSchema, updateSchema } from '../../src/entities/entity';
import { MAX_SECRETS, secretAccepted } from '../../src/entities/secrets';
import { IdStride } from '../../src/segment/stride';
import { FakeEntityStore } from '../../src/entities/fake-entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { GenerationSync, LocalRegistrationGeneration } from '../../src/entities/generation-sync';
import { systemClock } from '../../src/clock';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../src/errors';
import { FakeClock } from '../support/clock';
import { countedGeneration } from '../support/generation';

describe('entity registry over the fake store (no I/O)', () => {
  it('registers with defaults, keeps the secret only as a hash, tells subscribers', async () => {
    const store = new FakeEntityStore();
    const registry = new EntityRegistry(store, new FakeClock({ now: 1_000_000, sleep: 'advance' }));
    const seen: string[] = [];
    registry.subscribe({
      onRegistered: (entity) => void seen.push(`+${entity.key}`),
      onRetired: (key) => void seen.push(`-${key}`),
    });
    const { entity, secret } = await registry.register({ key: 'orders', mode: 'monotonic' });
    expect(entity).toMatchObject({
      key: 'orders',
      step: 1000,
      maxSizePerTimes: 1000,
      maxSizePerSecond: 5000,
      minSizePercent: 80,
    });
    expect(JSON.stringify(entity.secrets)).not.toContain(secret);
    expect(secretAccepted(entity, secret, 0)).toBe(true);
    await registry.retire('orders');
    expect(seen).toEqual(['+orders', '-orders']);
    expect(registry.get('orders')).toBeUndefined();
  });

  it('registers spacing and compat; firstId becomes the start offset for the stride; bad spacing is a 400', async () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
    const registry = new EntityRegistry(store, clock, undefined, 100, new IdStride(2, 1));
    const { entity } = await registry.register(
      registerSchema.parse({ key: 'tiny', delta: 3, remainder: 2, firstId: '9007199254740995', compat: ['leaf'] }),
    );
    expect(entity).toMatchObject({ delta: 3, remainder: 2, compat: ['leaf'] });
    // (n·2 + 1)·3 + 2 ≥ 2^53 + 3: the first such n, exactly.
    const spaced = new IdStride(2, 1).of(entity);
    expect(spaced.toId(entity.startOffset) >= 2n ** 53n + 3n).toBe(true);
    expect(spaced.toId(entity.startOffset - 1n) < 2n ** 53n + 3n).toBe(true);
    expect(registry.get('tiny')).toMatchObject({ delta: 3, remainder: 2, compat: ['leaf'] });
    // Opted in and out by an admin.
    expect((await registry.update('tiny', { compat: [] })).compat).toEqual([]);
    await expect(registry.register(registerSchema.parse({ key: 'bad', delta: 3, remainder: 3 }))).rejects.toThrow(
      /remainder \(3\) must be below delta \(3\)/,
    );
    await expect(
      registry.register(registerSchema.parse({ key: 'bad', startOffset: 5, firstId: 9 })),
    ).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(
      registry.register(registerSchema.parse({ key: 'bad', mode: 'snowflake', delta: 2 })),
    ).rejects.toBeInstanceOf(InvalidRequestError);
    expect(() => registerSchema.parse({ key: 'bad', compat: ['tinyid'] })).toThrow();
    expect(() => updateSchema.parse({ delta: 2 })).toThrow();
    expect(await store.exists('bad')).toBe(false);
  });

  it('a retired key is never registered again; bad rules change nothing', async () => {
    const store = new FakeEntityStore();
    const registry = new EntityRegistry(store, new FakeClock({ now: 1_000_000, sleep: 'advance' }));
    await registry.register({ key: 'users', mode: 'monotonic' });
    await registry.retire('users');
    await expect(registry.register({ key: 'users', mode: 'monotonic' })).rejects.toBeInstanceOf(ConflictError);
    await expect(
      registry.register({ key: 'bad', mode: 'monotonic', step: 1000, maxPoolSize: 1000, minSizePercent: 50 }),
    ).rejects.toBeInstanceOf(InvalidRequestError);
    expect(await store.exists('bad')).toBe(false);
    await expect(registry.update('nobody', { step: 10 })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refresh picks up changes made through another instance', async () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
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

  it('two instances changing one entity at once, each from its own cache: both changes count', async () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
    const here = new EntityRegistry(store, clock);
    const there = new EntityRegistry(store, clock);
    const { secret } = await here.register({ key: 'shared', mode: 'trend' });
    await there.load();
    // Each adds a secret and changes a field; neither has seen the other's writes.
    await here.addSecret('shared', { secret: 'added-here-0123456789' });
    await there.addSecret('shared', { secret: 'added-there-0123456789' });
    await here.update('shared', { step: 500 });
    await there.update('shared', { maxPoolSize: 9000 });
    const stored = (await store.findLive('shared'))!;
    for (const s of [secret, 'added-here-0123456789', 'added-there-0123456789'])
      expect(secretAccepted(stored, s, clock.now()), s).toBe(true);
    expect(stored).toMatchObject({ step: 500, maxPoolSize: 9000 });
    expect(there.get('shared')).toEqual(stored);
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
    expect(found.every((entity) => entity?.key === 'late')).toBe(true);
    expect(store.calls.changedSince).toBe(1);
    for (let i = 0; i < 1000; i++) await here.find(`probe-${i}`);
    expect(store.calls.changedSince).toBe(1);
  });

  it('when the generation cannot be read (Redis failing), a refresh decides, so a new entity still works', async () => {
    const store = new FakeEntityStore();
    const failing = {
      current: async (): Promise<number> => Promise.reject(new Error('Connection is closed.')),
      bump: async () => undefined,
    };
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

describe('EntityRegistry.refreshIfStale (the 100 ms tick)', () => {
  it('a secret rotated or a key retired through another instance is seen at the next tick; no change costs no SQL', async () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
    const generation = new LocalRegistrationGeneration();
    const here = new EntityRegistry(store, clock, generation);
    const there = new EntityRegistry(store, clock, generation);
    const { secret } = await there.register({ key: 'orders', mode: 'monotonic' });
    await here.load();
    await here.refreshIfStale(1000);
    const before = store.calls.changedSince ?? 0;
    clock.advance(100);
    await here.refreshIfStale(1000); // nothing moved, not a second old: no query
    expect(store.calls.changedSince ?? 0).toBe(before);

    clock.advance(1);
    const rotated = await there.rotateSecret('orders');
    await here.refreshIfStale(1000);
    expect(secretAccepted(here.get('orders'), rotated, 0)).toBe(true);
    expect(secretAccepted(here.get('orders'), secret, 0)).toBe(false);

    clock.advance(1);
    await there.retire('orders');
    await here.refreshIfStale(1000);
    expect(here.get('orders')).toBeUndefined();

    clock.advance(1000);
    const queries = store.calls.changedSince ?? 0;
    await here.refreshIfStale(1000); // a second old: refreshed whatever the generation says
    expect(store.calls.changedSince).toBe(queries + 1);
  });

  it('while the database fails, tries at most once per max age however often the generation moves', async () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
    const generation = new LocalRegistrationGeneration();
    const here = new EntityRegistry(store, clock, generation);
    await here.load();
    let attempts = 0;
    store.changedSince = async () => {
      attempts++;
      throw new Error('connect ECONNREFUSED');
    };
    for (let i = 0; i < 20; i++) {
      await generation.bump();
      clock.advance(100);
      await here.refreshIfStale(1000).catch(() => undefined);
    }
    expect(attempts).toBe(2); // 2 s of ticks
  });
});

describe('EntityRegistry.tick (reads of the generation follow requests)', () => {
  async function ticks(registry: EntityRegistry, clock: FakeClock, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      clock.advance(100);
      await registry.tick();
    }
  }

  /**
   * Two instances on one store and generation, `orders` registered through
   * `there`, `here` loaded and then idle past IDLE_AFTER_MS. `sleep`: the
   * fake clock's ('wait' when the test moves time past a wait itself).
   */
  async function idleHere(sleep: 'advance' | 'wait') {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep });
    const generation = countedGeneration();
    const here = new EntityRegistry(store, clock, generation);
    const there = new EntityRegistry(store, clock, generation);
    const { entity, secret } = await there.register({ key: 'orders', mode: 'monotonic' });
    await here.load();
    clock.advance(GenerationSync.IDLE_AFTER_MS + 1);
    return { store, clock, generation, here, there, entity, secret };
  }

  it('an instance no request used reads it once a second; a request brings back the 100 ms reads, 10 s without one ends them', async () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
    const generation = countedGeneration();
    const here = new EntityRegistry(store, clock, generation);
    await new EntityRegistry(store, clock, generation).register({ key: 'orders', mode: 'monotonic' });
    await here.load();

    generation.reads = 0;
    await ticks(here, clock, 30); // 3 s idle: the full refresh each second (it reads the generation twice)
    expect(generation.reads).toBe(6);
    expect(store.calls.changedSince).toBe(3);

    expect((await here.find('orders'))?.key).toBe('orders');
    generation.reads = 0;
    await ticks(here, clock, 30); // 3 s serving: every tick reads it
    expect(generation.reads).toBeGreaterThanOrEqual(30);

    clock.advance(GenerationSync.IDLE_AFTER_MS);
    await here.tick();
    generation.reads = 0;
    await ticks(here, clock, 30);
    expect(generation.reads).toBe(6);
  });

  it('the first request after an idle spell sees a secret rotated elsewhere since the last read', async () => {
    const { clock, here, there, secret } = await idleHere('advance');
    await here.tick(); // idle: the full refresh, then no read for a second
    clock.advance(300);
    const rotated = await there.rotateSecret('orders');
    await here.tick(); // idle, a second not over: no read
    const found = await here.find('orders');
    expect(secretAccepted(found, rotated, 0)).toBe(true);
    expect(secretAccepted(found, secret, 0)).toBe(false);
  });

  it('…also when the idle tick read it just before the rotation, or is reading it then', async () => {
    const { clock, generation, here, there } = await idleHere('advance');
    await here.tick(); // idle: the full refresh reads the generation now
    clock.advance(10);
    const rotated = await there.rotateSecret('orders');
    expect(secretAccepted(await here.find('orders'), rotated, 0)).toBe(true);

    clock.advance(GenerationSync.IDLE_AFTER_MS + 1);
    let release!: () => void;
    generation.hold = new Promise((r) => (release = r));
    const ticking = here.tick(); // the idle tick's read is under way, holding the generation from before the rotation
    generation.hold = undefined;
    const again = await there.rotateSecret('orders');
    expect(secretAccepted(await here.find('orders'), again, 0)).toBe(true);
    release();
    await ticking;
  });

  it('…also when the refresh that follows takes longer than the 50 ms a read of the generation may', async () => {
    const { store, clock, here, there } = await idleHere('wait');
    const rotated = await there.rotateSecret('orders');
    const changedSince = store.changedSince.bind(store);
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    store.changedSince = async (since) => {
      await slow;
      return changedSince(since);
    };
    const finding = here.find('orders');
    await new Promise((r) => setImmediate(r));
    clock.advance(GenerationSync.CATCH_UP_WAIT_MS + 10); // the database is slow, not Redis
    await new Promise((r) => setImmediate(r));
    release();
    expect(secretAccepted(await finding, rotated, 0)).toBe(true);
  });

  it('a read that does not answer holds the requests of its first 50 ms, those after not at all; the cache then stands', async () => {
    const { clock, generation, here, entity } = await idleHere('wait');
    generation.reads = 0;
    let release!: () => void;
    generation.hold = new Promise((r) => (release = r));
    const settled: string[] = [];
    const first = here.find('orders').then((e) => void settled.push(`first ${e?.key}`));
    const second = here.find('orders').then((e) => void settled.push(`second ${e?.key}`));
    await new Promise((r) => setImmediate(r));
    expect(settled).toEqual([]); // both wait for the one read
    expect(generation.reads).toBe(1);
    clock.advance(GenerationSync.CATCH_UP_WAIT_MS);
    await Promise.all([first, second]);
    expect(settled.sort()).toEqual(['first orders', 'second orders']);
    expect((await here.find('orders'))?.secrets).toEqual(entity.secrets); // the read still hangs: no wait, no second read
    expect(generation.reads).toBe(1);
    release();
  });
});

describe('more than one secret per entity', () => {
  const setup = () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
    const generation = new LocalRegistrationGeneration();
    return {
      store,
      clock,
      here: new EntityRegistry(store, clock, generation),
      there: new EntityRegistry(store, clock, generation),
    };
  };

  it('rotation can keep the old secret for a while, by the injected clock, on every instance', async () => {
    const { clock, here, there } = setup();
    const { secret: old } = await there.register({ key: 'orders', mode: 'monotonic' });
    await here.load();
    clock.advance(1);
    const fresh = await there.rotateSecret('orders', 60);
    await here.refreshIfStale(1000);
    for (const registry of [here, there]) {
      expect(await registry.authenticate('orders', old)).toBeDefined();
      expect(await registry.authenticate('orders', fresh)).toBeDefined();
    }
    clock.advance(59_998);
    expect(await here.authenticate('orders', old)).toBeDefined();
    clock.advance(2);
    // Expired: refused with no refresh, by the clock alone.
    expect(await here.authenticate('orders', old)).toBeUndefined();
    expect(await here.authenticate('orders', fresh)).toBeDefined();
    // The same answer for an unknown key as for a wrong secret.
    expect(await here.authenticate('nobody', fresh)).toBeUndefined();
    // A rotation without overlap drops every old secret at once, everywhere.
    clock.advance(1);
    const third = await there.rotateSecret('orders');
    await here.refreshIfStale(1000);
    expect(await here.authenticate('orders', fresh)).toBeUndefined();
    expect(await here.authenticate('orders', third)).toBeDefined();
    expect(here.get('orders')!.secrets).toHaveLength(1);
  });

  it('adds given secrets once (re-runs add nothing), at most MAX_SECRETS, removes by id but never the last', async () => {
    const { clock, store, here, there } = setup();
    const { entity } = await here.register({ key: 'orders', mode: 'monotonic', secret: 'tinyid-token-0123456789' });
    expect(await here.authenticate('orders', 'tinyid-token-0123456789')).toBeDefined();
    await there.load();
    const a = await here.addSecret('orders', { secret: 'another-token-abcdefgh' });
    expect(a.added).toBe(true);
    expect(await here.addSecret('orders', { secret: 'another-token-abcdefgh' })).toMatchObject({
      added: false,
      id: a.id,
    });
    // Never stored in clear.
    expect(JSON.stringify((await store.findLive('orders'))!.secrets)).not.toContain('another-token');
    const made = await here.addSecret('orders', { expiresInSeconds: 10 });
    expect(made.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(made.expiresAt).toBe(clock.now() + 10_000);
    await here.addSecret('orders');
    await here.addSecret('orders');
    expect(here.get('orders')!.secrets).toHaveLength(MAX_SECRETS);
    await expect(here.addSecret('orders')).rejects.toBeInstanceOf(ConflictError);
    // An expired secret frees its place.
    clock.advance(10_000);
    expect((await here.addSecret('orders')).added).toBe(true);
    // Removal reaches the other instance at once (the generation moved).
    await there.tick();
    expect(await there.authenticate('orders', 'another-token-abcdefgh')).toBeDefined();
    await here.removeSecret('orders', a.id);
    clock.advance(100);
    await there.tick();
    expect(await there.authenticate('orders', 'another-token-abcdefgh')).toBeUndefined();
    await expect(here.removeSecret('orders', 'nosuch')).rejects.toBeInstanceOf(NotFoundError);
    for (const s of here.get('orders')!.secrets.slice(1)) await here.removeSecret('orders', s.id);
    await expect(here.removeSecret('orders', here.get('orders')!.secrets[0].id)).rejects.toBeInstanceOf(ConflictError);
    expect(entity.secrets).toHaveLength(1);
  });
});
