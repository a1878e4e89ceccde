import { describe, expect, it } from 'vitest';
import { Fleet, type FleetSelf } from '../../src/fleet/fleet';
import {
  type EntityRates,
  type FleetAlarm,
  type FleetStore,
  GONE_KEPT_TTLS,
  type Heartbeat,
  MAX_PUBLISHED_RATES,
  fleetView,
  parseHeartbeat,
  publishedRates,
} from '../../src/fleet/instances';
import { MemoryFleetStore } from '../../src/fleet/memory-fleet-store';
import { silentLogger } from '../../src/logger';
import { FakeClock } from '../support/clock';

const TTL = 10_000;

function self(id: string, o: Partial<FleetSelf> = {}): FleetSelf {
  return {
    id,
    version: '1.0.0',
    node: 'v24.0.0',
    startedAt: 0,
    dialect: 'mysql',
    library: 'idpool_0123456789ab',
    clockSkewMs: () => ({ redis: 2, database: -1 }),
    address: () => `${id}:8080`,
    workerId: () => 1,
    epoch: () => Promise.resolve('run-a:repl-a'),
    lastSampleAt: () => undefined,
    activeAlarms: () => 0,
    rates: () => new Map(),
    ...o,
  };
}

function heartbeat(id: string, at: number, o: Partial<Heartbeat> = {}): Heartbeat {
  return {
    id,
    address: `${id}:8080`,
    version: '1.0.0',
    node: 'v24.0.0',
    startedAt: new Date(0).toISOString(),
    workerId: 1,
    epoch: 'run-a:repl-a',
    dialect: 'mysql',
    lastSampleAt: null,
    activeAlarms: 0,
    at,
    ttlMs: TTL,
    ...o,
  };
}

/** A store whose every call waits for a promise that never settles: Redis stopped (SIGSTOP), not refused. */
class HungStore implements FleetStore {
  readonly kind = 'redis';
  private readonly never = new Promise<never>(() => undefined);
  appendAlarm(): Promise<void> {
    return this.never;
  }
  recentAlarms(): Promise<FleetAlarm[]> {
    return this.never;
  }
  publish(): Promise<void> {
    return this.never;
  }
  heartbeats(): Promise<Heartbeat[]> {
    return this.never;
  }
  rates(): Promise<Map<string, EntityRates>> {
    return this.never;
  }
  drop(): Promise<void> {
    return this.never;
  }
}

describe('fleetView: alive, gone, dropped, disagreement', () => {
  it('calls an instance gone one ms past its TTL, keeps it listed for 30 TTLs, then drops it', () => {
    const now = 1_000_000_000;
    const beats = [
      heartbeat('a', now),
      heartbeat('b', now - TTL),
      heartbeat('c', now - TTL - 1),
      heartbeat('d', now - TTL * GONE_KEPT_TTLS),
      heartbeat('e', now - TTL * GONE_KEPT_TTLS - 1),
    ];
    const { view, drop } = fleetView(beats, now, 'a');
    expect(view.instances.map((i) => [i.id, i.state])).toEqual([
      ['a', 'alive'],
      ['b', 'alive'],
      ['c', 'gone'],
      ['d', 'gone'],
    ]);
    expect(drop).toEqual(['e']);
    expect([view.alive, view.gone]).toEqual([2, 2]);
    expect(view.instances.find((i) => i.id === 'a')!.self).toBe(true);
    expect(view.instances.find((i) => i.id === 'c')!.heartbeatAgeSeconds).toBe(10);
  });

  it('flags the alive instance on another epoch or version, not a gone one nor an unread epoch', () => {
    const now = 5_000_000;
    const beats = [
      heartbeat('a', now),
      heartbeat('b', now),
      heartbeat('c', now, { epoch: 'run-old:repl-old' }),
      heartbeat('d', now, { epoch: null, version: '1.1.0' }),
      heartbeat('e', now - TTL - 1, { epoch: 'run-gone:x', version: '0.9.0' }),
    ];
    const { view } = fleetView(beats, now, 'a');
    expect(view.disagreement).toEqual({ epoch: true, version: true });
    const flags = Object.fromEntries(view.instances.map((i) => [i.id, i.disagrees]));
    expect(flags).toEqual({ a: [], b: [], c: ['epoch'], d: ['version'], e: [] });
  });

  it('sees no disagreement when every alive instance agrees', () => {
    const now = 5_000_000;
    const { view } = fleetView([heartbeat('a', now), heartbeat('b', now - 1)], now, 'a');
    expect(view.disagreement).toEqual({ epoch: false, version: false });
  });

  it('reads back known heartbeat fields only, and skips what is not a heartbeat', () => {
    const hb = heartbeat('a', 1000);
    expect(parseHeartbeat(JSON.stringify({ ...hb, extra: 'from a newer version' }))).toEqual(hb);
    for (const bad of ['not json', 'null', '[]', JSON.stringify({ ...hb, at: 'soon' }), JSON.stringify({ id: 'x' })])
      expect(parseHeartbeat(bad), bad).toBeUndefined();
  });

  it('publishes the busiest entities only, and no idle ones', () => {
    const rates = new Map<string, number>([['idle', 0]]);
    for (let i = 0; i < MAX_PUBLISHED_RATES + 10; i++) rates.set(`e${i}`, i + 1);
    const published = publishedRates(rates);
    expect(Object.keys(published)).toHaveLength(MAX_PUBLISHED_RATES);
    expect(published.idle).toBeUndefined();
    expect(published.e0).toBeUndefined();
    expect(published[`e${MAX_PUBLISHED_RATES + 9}`]).toBe(MAX_PUBLISHED_RATES + 10);
  });
});

describe('Fleet on an injected clock', () => {
  it('lists the instances of one store, shows a silent one gone after its TTL, then drops it', async () => {
    const clock = new FakeClock();
    const store = new MemoryFleetStore();
    // A MemoryFleetStore is "memory": call it shared here to see the Redis labels.
    const shared: FleetStore = Object.assign(Object.create(store) as FleetStore, { kind: 'redis' as const });
    const a = new Fleet({ store: shared, clock, log: silentLogger, self: self('a'), ttlMs: TTL });
    const b = new Fleet({ store: shared, clock, log: silentLogger, self: self('b'), ttlMs: TTL });
    await b.beat();
    await a.beat();
    let view = await a.instances();
    expect(view).toMatchObject({ source: 'redis', alive: 2, gone: 0 });

    clock.advance(TTL + 1);
    await a.beat();
    view = await a.instances();
    expect(view.instances.map((i) => [i.id, i.state])).toEqual([
      ['a', 'alive'],
      ['b', 'gone'],
    ]);
    clock.advance(TTL * GONE_KEPT_TTLS);
    await a.beat();
    view = await a.instances();
    expect(view.instances.map((i) => i.id)).toEqual(['a']);
    expect((await store.heartbeats()).map((hb) => hb.id)).toEqual(['a']);
  });

  it('sums the take rates of the alive instances, this one as of now', async () => {
    const clock = new FakeClock();
    const store = new MemoryFleetStore();
    const mine = new Map([['orders', 10]]);
    const a = new Fleet({ store, clock, log: silentLogger, self: self('a', { rates: () => mine }), ttlMs: TTL });
    const b = new Fleet({
      store,
      clock,
      log: silentLogger,
      self: self('b', {
        rates: () =>
          new Map([
            ['orders', 5],
            ['flakes', 7],
          ]),
      }),
      ttlMs: TTL,
    });
    await b.beat();
    await a.beat();
    mine.set('orders', 20);
    expect(await a.rates(await a.instances())).toEqual({
      rates: new Map([
        ['flakes', 7],
        ['orders', 25],
      ]),
      instances: 2,
    });
    // b gone: its rates no longer count.
    clock.advance(TTL + 1);
    await a.beat();
    expect(await a.rates(await a.instances())).toEqual({ rates: new Map([['orders', 20]]), instances: 1 });
  });

  it('answers from this instance alone within the read timeout when the store hangs, saying so', async () => {
    const clock = new FakeClock();
    const fleet = new Fleet({ store: new HungStore(), clock, log: silentLogger, self: self('a'), ttlMs: TTL });
    const instances = fleet.instances();
    const alarms = fleet.alarms(100, () => [{ instance: 'a', record: { name: 'pool_low' } }]);
    // Nothing answers until the injected clock passes the 500 ms bound.
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(500);
    }
    const view = await instances;
    expect(view).toMatchObject({ source: 'local', alive: 1 });
    expect(view.note).toMatch(/Redis did not answer \(no answer within 500 ms\)/);
    expect(view.instances[0]).toMatchObject({ id: 'a', self: true, state: 'alive', epoch: null });
    const read = await alarms;
    expect(read).toMatchObject({ source: 'local', recent: [{ instance: 'a', record: { name: 'pool_low' } }] });
    expect(read.note).toMatch(/the alarms of this instance only/);
    expect(await fleet.rates(view)).toBeUndefined();
  });

  it('keeps the alarms Redis did not take and sends them, in order, on the next heartbeat that reaches it', async () => {
    const clock = new FakeClock();
    const store = new MemoryFleetStore();
    let down = true;
    const flaky: FleetStore = Object.assign(Object.create(store) as FleetStore, {
      kind: 'redis' as const,
      appendAlarm: (alarm: FleetAlarm) => (down ? Promise.reject(new Error('ECONNREFUSED')) : store.appendAlarm(alarm)),
    });
    const fleet = new Fleet({ store: flaky, clock, log: silentLogger, self: self('a'), ttlMs: TTL });
    fleet.appendAlarm({ name: 'redis_server_changed' });
    await new Promise((r) => setImmediate(r));
    fleet.appendAlarm({ name: 'pool_discarded' });
    await fleet.beat();
    expect(await store.recentAlarms(10)).toEqual([]);
    down = false;
    await fleet.beat();
    expect((await store.recentAlarms(10)).map((a) => a.record.name)).toEqual([
      'pool_discarded',
      'redis_server_changed',
    ]);
  });

  it('says embedded mode when its store is this process alone', async () => {
    const clock = new FakeClock();
    const fleet = new Fleet({ store: new MemoryFleetStore(), clock, log: silentLogger, self: self('a'), ttlMs: TTL });
    await fleet.beat();
    expect(await fleet.instances()).toMatchObject({
      source: 'local',
      alive: 1,
      note: expect.stringMatching(/embedded/),
    });
  });
});
