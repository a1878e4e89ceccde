import { expect, it } from 'vitest';
import type { FleetStore, Heartbeat } from '../../../src/fleet/instances';

/** A heartbeat with every field set, so it reads back as it was written. */
function heartbeat(id: string, at: number, o: Partial<Heartbeat> = {}): Heartbeat {
  return {
    id,
    address: `${id}:8080`,
    version: '0.1.0',
    node: 'v24.0.0',
    startedAt: new Date(at - 60_000).toISOString(),
    workerId: 3,
    epoch: 'run:replid',
    dialect: 'mysql',
    library: 'idpool_0123abcd',
    clockSkewMs: { redis: 2, database: null },
    lastSampleAt: new Date(at).toISOString(),
    activeAlarms: 1,
    at,
    ttlMs: 10_000,
    ...o,
  };
}

const byId = (beats: Heartbeat[]) => [...beats].sort((a, b) => a.id.localeCompare(b.id));

/**
 * What every {@link FleetStore} does, run against `RedisFleetStore` and
 * `MemoryFleetStore` alike: one heartbeat and one set of rates per
 * instance, the latest published; `drop` takes both away; alarms read
 * back newest first.
 */
export function fleetStoreContract(make: () => Promise<FleetStore>): void {
  it('keeps the latest heartbeat and rates of each instance', async () => {
    const store = await make();
    const now = Date.now();
    await store.publish(heartbeat('a', now - 1000), { orders: 5 });
    await store.publish(heartbeat('b', now), { users: 2.5 });
    await store.publish(heartbeat('a', now, { activeAlarms: 0, workerId: null }), { orders: 7, users: 1 });
    expect(byId(await store.heartbeats())).toEqual([
      heartbeat('a', now, { activeAlarms: 0, workerId: null }),
      heartbeat('b', now),
    ]);
    expect(await store.rates()).toEqual(
      new Map([
        ['a', { orders: 7, users: 1 }],
        ['b', { users: 2.5 }],
      ]),
    );
  });

  it('drop takes the heartbeats and rates of the instances named, and nothing with none named', async () => {
    const store = await make();
    const now = Date.now();
    for (const id of ['a', 'b', 'c']) await store.publish(heartbeat(id, now), { [id]: 1 });
    await store.drop([]);
    expect(await store.heartbeats()).toHaveLength(3);
    await store.drop(['a', 'c', 'never-there']);
    expect((await store.heartbeats()).map((hb) => hb.id)).toEqual(['b']);
    expect([...(await store.rates()).keys()]).toEqual(['b']);
  });

  it('reads alarms back newest first, as many as asked', async () => {
    const store = await make();
    expect(await store.recentAlarms(10)).toEqual([]);
    for (let i = 1; i <= 3; i++)
      await store.appendAlarm({ instance: `i${i}`, record: { name: 'pool_low', entityKey: `e${i}`, n: i } });
    expect(await store.recentAlarms(2)).toEqual([
      { instance: 'i3', record: { name: 'pool_low', entityKey: 'e3', n: 3 } },
      { instance: 'i2', record: { name: 'pool_low', entityKey: 'e2', n: 2 } },
    ]);
    expect((await store.recentAlarms(10)).map((a) => a.instance)).toEqual(['i3', 'i2', 'i1']);
  });
}
