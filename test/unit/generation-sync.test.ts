import { describe, expect, it } from 'vitest';
import type { EntityConfig } from '../../src/entities/entity';
import { secretAccepted, secretRecord } from '../../src/entities/secrets';
import { EntityCache } from '../../src/entities/entity-cache';
import { FakeEntityStore } from '../../src/entities/fake-entity-store';
import { GenerationSync } from '../../src/entities/generation-sync';
import { FakeClock, settle } from '../support/clock';
import { entityConfig } from '../support/entity';
import { rejection } from '../support/failures';
import { countedGeneration, gate } from '../support/generation';

const { IDLE_AFTER_MS, CATCH_UP_AFTER_MS, CATCH_UP_WAIT_MS, FULL_REFRESH_MS, REFRESH_WAIT_MS } = GenerationSync;

/**
 * The protocol over a real {@link EntityCache} on the fake store, with the
 * shared generation counting its reads. `elsewhere` changes what another
 * instance would: the row first, then the bump. `orders` is registered and
 * loaded; the clock is left at the load (`sleep`: the fake clock's, 'wait'
 * when the test moves time past a wait itself).
 */
async function synced(sleep: 'advance' | 'wait' = 'advance') {
  const store = new FakeEntityStore();
  const clock = new FakeClock({ now: 1_000_000, sleep });
  const generation = countedGeneration();
  const told: string[] = [];
  const cache = new EntityCache(store, clock, {
    onRegistered: (entity) => void told.push(`+${entity.key}`),
    onRetired: (key) => void told.push(`-${key}`),
  });
  const sync = new GenerationSync(cache, generation, clock);
  const elsewhere = {
    async register(key: string): Promise<void> {
      const now = clock.now();
      await store.insert(entityConfig({ key, secrets: [secretRecord(`${key}-first-secret`, now)], updateTime: now }));
      await generation.bump();
    },
    /** Replaces every secret of `key` by `secret`. */
    async rotate(key: string, secret: string): Promise<void> {
      const now = clock.now() + 1;
      await store.setSecrets(key, [secretRecord(secret, now)], now);
      await generation.bump();
    },
  };
  await elsewhere.register('orders');
  await sync.load();
  store.calls.changedSince = 0;
  generation.reads = 0;
  const find = (key: string) => sync.lookup(() => cache.get(key));
  return { store, clock, generation, cache, sync, elsewhere, find, told };
}

/** Holds the store's `changedSince` answers: each query reads the rows when it is made and answers once `held.open()`. */
function holdQueries(store: FakeEntityStore) {
  const held = gate();
  const query = store.changedSince.bind(store);
  store.changedSince = async (since) => {
    const rows = await query(since);
    await held.opened;
    return rows;
  };
  return held;
}

const accepts = (entity: EntityConfig | undefined, secret: string) => secretAccepted(entity, secret, 0);

describe('GenerationSync: a key missing from the cache', () => {
  it('a fresh cache answers unknown keys with no query while the generation stays', async () => {
    const { store, find } = await synced();
    for (let i = 0; i < 1000; i++) expect(await find(`probe-${i}`)).toBeUndefined();
    expect((await find('orders'))?.key).toBe('orders');
    expect(store.calls).toEqual({ listLive: 1, insert: 1, changedSince: 0 });
  });

  it('a generation that went back (Redis came back empty) is a miss too: a key registered since is found at once', async () => {
    const { store, generation, elsewhere, find } = await synced();
    await elsewhere.register('before');
    expect((await find('before'))?.key).toBe('before');
    generation.reset();
    await elsewhere.register('after-reset');
    expect((await find('after-reset'))?.key).toBe('after-reset');
    expect(store.calls.changedSince).toBe(2);
  });

  it('a missed generation: one refresh, shared by 50 concurrent lookups, finds the key registered elsewhere', async () => {
    const { store, elsewhere, find, told } = await synced();
    await elsewhere.register('late');
    const found = await Promise.all(Array.from({ length: 50 }, () => find('late')));
    expect(found.every((entity) => entity?.key === 'late')).toBe(true);
    expect(store.calls.changedSince).toBe(1);
    expect(told).toEqual(['+late']);
    // Synced again: unknown keys cost nothing more.
    for (let i = 0; i < 100; i++) expect(await find(`probe-${i}`)).toBeUndefined();
    expect(store.calls.changedSince).toBe(1);
  });

  it('a refresh under way read the generation before the registration: a second, started after it, finds the key', async () => {
    const { store, clock, elsewhere, find } = await synced();
    await elsewhere.register('first');
    const held = holdQueries(store);
    const first = find('first'); // its refresh reads generation 2, and the rows before `second`
    await settle();
    clock.advance(10);
    await elsewhere.register('second');
    const second = find('second'); // generation 3: the shared refresh under way is not enough
    await settle();
    held.open();
    expect((await first)?.key).toBe('first');
    expect((await second)?.key).toBe('second');
    expect(store.calls.changedSince).toBe(2);
  });
});

describe('GenerationSync: the catch-up of a lookup after an idle spell (6c09569)', () => {
  it('the idle tick read the generation just before a rotation elsewhere: the next lookup reads it afresh', async () => {
    const { clock, sync, elsewhere, find } = await synced();
    clock.advance(IDLE_AFTER_MS + 1);
    await sync.tick(); // idle: the full refresh reads the generation now
    clock.advance(10); // well within CATCH_UP_AFTER_MS of that read
    await elsewhere.rotate('orders', 'rotated-secret');
    const found = await find('orders');
    expect(accepts(found, 'rotated-secret')).toBe(true);
    expect(accepts(found, 'orders-first-secret')).toBe(false);
  });

  it("the idle tick's read is under way, holding the generation from before the rotation: the lookup reads it again", async () => {
    const { clock, generation, sync, elsewhere, find } = await synced();
    clock.advance(IDLE_AFTER_MS + 1);
    const held = gate();
    generation.hold = held.opened;
    const ticking = sync.tick(); // its read took the generation before the rotation and has not answered
    generation.hold = undefined;
    await elsewhere.rotate('orders', 'rotated-secret');
    expect(accepts(await find('orders'), 'rotated-secret')).toBe(true);
    held.open();
    await ticking;
  });

  it('a bump during the catch-up: the refresh under way read the rows before it, so a second refresh follows', async () => {
    const { store, clock, elsewhere, find } = await synced();
    await elsewhere.register('other');
    const held = holdQueries(store);
    const missing = find('other'); // the shared refresh: generation 2 read, rows read before the rotation
    await settle();
    await elsewhere.rotate('orders', 'rotated-secret'); // generation 3
    clock.advance(CATCH_UP_AFTER_MS + 1); // no read since: the next lookup catches up
    const found = find('orders');
    await settle();
    held.open();
    expect((await missing)?.key).toBe('other');
    expect(accepts(await found, 'rotated-secret')).toBe(true);
    expect(store.calls.changedSince).toBe(2);
  });

  it('concurrent catch-ups are coalesced: 20 lookups after an idle spell make one read of the generation and one refresh', async () => {
    const { store, clock, generation, elsewhere, find } = await synced();
    clock.advance(IDLE_AFTER_MS + 1);
    await elsewhere.rotate('orders', 'rotated-secret');
    const found = await Promise.all(Array.from({ length: 20 }, () => find('orders')));
    expect(found.every((entity) => accepts(entity, 'rotated-secret'))).toBe(true);
    expect(generation.reads).toBe(2); // the catch-up's read, and the refresh's own
    expect(store.calls.changedSince).toBe(1);
  });

  it('the refresh after the read is awaited in full, however long past the 50 ms the read may take', async () => {
    const { store, clock, elsewhere, find } = await synced('wait');
    clock.advance(IDLE_AFTER_MS + 1);
    await elsewhere.rotate('orders', 'rotated-secret');
    const held = holdQueries(store); // the database is slow, not Redis
    const found = find('orders');
    await settle();
    clock.advance(CATCH_UP_WAIT_MS + 10);
    await settle();
    held.open();
    expect(accepts(await found, 'rotated-secret')).toBe(true);
  });

  it('a read that does not answer holds the lookups of its first 50 ms only; the cache then stands', async () => {
    const { clock, generation, find } = await synced('wait');
    clock.advance(IDLE_AFTER_MS + 1);
    const held = gate();
    generation.hold = held.opened;
    const settled: string[] = [];
    const lookups = [find('orders'), find('orders')].map((p) => p.then((e) => void settled.push(`${e?.key}`)));
    await settle();
    expect(settled).toEqual([]); // both wait for the one read
    clock.advance(CATCH_UP_WAIT_MS);
    await Promise.all(lookups);
    expect(settled).toEqual(['orders', 'orders']);
    expect((await find('orders'))?.key).toBe('orders'); // the read still hangs: no wait, no second read
    expect(generation.reads).toBe(1);
    held.open();
  });

  it('a read left hanging from an earlier idle spell, answering late, does not end the wait for the next one', async () => {
    const { clock, generation, elsewhere, find } = await synced('wait');
    clock.advance(IDLE_AFTER_MS + 1);
    const stale = gate();
    generation.hold = stale.opened;
    const first = find('orders');
    await settle();
    clock.advance(CATCH_UP_WAIT_MS);
    await first; // waited 50 ms, then the cache
    clock.advance(IDLE_AFTER_MS + 1);
    await elsewhere.rotate('orders', 'rotated-secret');
    const fresh = gate();
    generation.hold = fresh.opened;
    const second = find('orders'); // idle again: a read of its own, which will show the rotation
    await settle();
    generation.hold = undefined;
    stale.open(); // the old read answers now
    await settle();
    const third = find('orders'); // within 50 ms of the second's read: waits for it too
    await settle();
    fresh.open();
    expect(accepts(await second, 'rotated-secret')).toBe(true);
    expect(accepts(await third, 'rotated-secret')).toBe(true);
  });
});

describe('GenerationSync: failures', () => {
  it('a failing store: the lookup that needs it fails with its error, the cache is kept, the next lookup after recovery syncs', async () => {
    const { store, elsewhere, find, cache } = await synced();
    const before = cache.get('orders');
    await elsewhere.register('late');
    const query = store.changedSince.bind(store);
    store.changedSince = async () => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:3306');
    };
    expect(await rejection(find('late'))).toMatchObject({ message: 'connect ECONNREFUSED 127.0.0.1:3306' });
    expect(await find('orders')).toBe(before); // what was cached still answers
    expect(cache.count()).toBe(1);
    store.changedSince = query;
    expect((await find('late'))?.key).toBe('late'); // not recorded as synced: the generation still calls for a refresh
  });

  it('a failing store during a catch-up: the cached entry answers, each catch-up tries twice', async () => {
    const { store, clock, elsewhere, find } = await synced();
    clock.advance(IDLE_AFTER_MS + 1);
    await elsewhere.rotate('orders', 'rotated-secret');
    let attempts = 0;
    store.changedSince = async () => {
      attempts++;
      throw new Error('connect ECONNREFUSED 127.0.0.1:3306');
    };
    expect(accepts(await find('orders'), 'orders-first-secret')).toBe(true);
    expect(attempts).toBe(2);
  });

  it('while the store fails the tick refreshes once per full-refresh age, however often the generation moves', async () => {
    const { store, clock, generation, sync, find } = await synced();
    await find('orders'); // serving: every tick reads the generation
    let attempts = 0;
    store.changedSince = async () => {
      attempts++;
      throw new Error('connect ECONNREFUSED 127.0.0.1:3306');
    };
    const failures: unknown[] = [];
    for (let i = 0; i < 20; i++) {
      await generation.bump();
      clock.advance(100);
      await sync.tick().catch((err: unknown) => failures.push(err));
    }
    expect(attempts).toBe(2); // 2 s of ticks
    expect(failures).toHaveLength(2); // each failure reaches the tick's caller (the service logs it)
  });

  it('a generation that cannot be read: a refresh decides, so an entity registered elsewhere still works', async () => {
    const { store, generation, elsewhere, find } = await synced();
    await elsewhere.register('during-outage');
    generation.current = async () => {
      throw new Error('Connection is closed.');
    };
    expect((await find('during-outage'))?.key).toBe('during-outage');
    expect(store.calls.changedSince).toBe(1);
    // A key no refresh brings costs two refreshes, no more: neither can record a generation as synced.
    expect(await find('never')).toBeUndefined();
    expect(store.calls.changedSince).toBe(3);
  });

  it('a database that does not answer holds a lookup 2 s at most: a cached entry then answers as cached, a missing key is a 503', async () => {
    const { store, clock, elsewhere, find } = await synced('wait');
    clock.advance(IDLE_AFTER_MS + 1);
    await elsewhere.rotate('orders', 'rotated-secret'); // Redis moved on (a failover that lost the generation does too)
    await elsewhere.register('late');
    const held = holdQueries(store); // a half-open link: the query neither answers nor fails
    const settled: string[] = [];
    const cached = find('orders').then((e) => void settled.push(accepts(e, 'orders-first-secret') ? 'cached' : '?'));
    let refusal: unknown;
    const missing = rejection(find('late')).then((err) => void settled.push((refusal = err as Error).name));
    await settle();
    clock.advance(REFRESH_WAIT_MS - 1);
    await settle();
    expect(settled).toEqual([]); // both wait for the one refresh under way
    clock.advance(1);
    await Promise.all([cached, missing]);
    expect(settled.sort()).toEqual(['UnavailableError', 'cached']);
    expect(refusal).toMatchObject({ statusCode: 503, code: 'unavailable', retryAfterSeconds: 1 });
    held.open(); // the refresh that went on without them lands: the next lookup finds both changes
    await settle();
    expect((await find('late'))?.key).toBe('late');
    expect(accepts(await find('orders'), 'rotated-secret')).toBe(true);
  });

  it('a bump that fails is no failure of the change: the others see it with their full refresh', async () => {
    const { generation, sync } = await synced();
    generation.bump = async () => {
      throw new Error('Connection is closed.');
    };
    await expect(sync.announce()).resolves.toBeUndefined();
  });
});

describe('GenerationSync.tick: reads of the generation follow lookups', () => {
  async function ticks(sync: GenerationSync, clock: FakeClock, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      clock.advance(100);
      await sync.tick();
    }
  }

  it('idle, it reads once a second (the full refresh); a lookup brings back the 100 ms reads, 10 s without one ends them', async () => {
    const { store, clock, generation, sync, find } = await synced();
    await ticks(sync, clock, 30); // 3 s idle: the full refresh each second (it reads the generation twice)
    expect(generation.reads).toBe(6);
    expect(store.calls.changedSince).toBe(3);

    await find('orders');
    generation.reads = 0;
    store.calls.changedSince = 0;
    await ticks(sync, clock, 30); // 3 s serving: every tick reads it, and refreshes once a second
    expect(generation.reads).toBe(33);
    expect(store.calls.changedSince).toBe(3);

    clock.advance(IDLE_AFTER_MS);
    await sync.tick();
    generation.reads = 0;
    await ticks(sync, clock, 30);
    expect(generation.reads).toBe(6);
  });

  it('a change elsewhere is seen at the next tick while serving; no change costs no query until the full refresh', async () => {
    const { store, clock, sync, elsewhere, find, cache, told } = await synced();
    await find('orders');
    clock.advance(100);
    await sync.tick();
    expect(store.calls.changedSince).toBe(0);
    await elsewhere.rotate('orders', 'rotated-secret');
    await elsewhere.register('late');
    clock.advance(100);
    await sync.tick();
    expect(store.calls.changedSince).toBe(1);
    expect(accepts(cache.get('orders'), 'rotated-secret')).toBe(true);
    expect(told).toEqual(['+late']);
    clock.advance(FULL_REFRESH_MS);
    await sync.tick();
    expect(store.calls.changedSince).toBe(2);
  });
});
