import { describe, expect, it } from 'vitest';
import { runFinish } from '../../src/cli/cutover';
import { CliError } from '../../src/cli/errors';
import type { IncumbentRow } from '../../src/cli/import-from';
import { EntityRegistry } from '../../src/entities/registry';
import { FakeEntityStore } from '../../src/entities/fake-entity-store';
import { UnavailableError, refuseHeld } from '../../src/errors';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { type LiveEntity, LiveAllocator } from '../../src/segment/live-allocator';
import { IdStride } from '../../src/segment/stride';
import type { IncumbentKind } from '../../src/segment/incumbent-rows';
import { FakeClock } from '../support/clock';
import { incumbentDatabaseContract } from '../support/contracts/incumbent-database';
import { FakeIncumbentRow } from '../support/fake-incumbent-row';

/** `recordLive` as the SQL allocator does it: counted while live, refused once `--finish` took the entity off. */
class FakeLiveRecord {
  live = true;
  readonly recorded: { key: string; start: bigint; end: bigint }[] = [];
  async recordLive(key: string, segment: { start: bigint; end: bigint }): Promise<boolean> {
    if (!this.live) return false;
    this.recorded.push({ key, ...segment });
    return true;
  }
}

const LEAF: LiveEntity = { delta: 1, remainder: 0, incumbent: { kind: 'leaf', key: 'orders', live: true } };
const TINYID: LiveEntity = { delta: 2, remainder: 1, incumbent: { kind: 'tinyid', key: 'items', live: true } };

function liveAllocator(
  row: FakeIncumbentRow,
  entity: LiveEntity,
  o: { record?: FakeLiveRecord; stride?: IdStride; incumbents?: boolean } = {},
) {
  const own = new FakeSegmentAllocator(1000n);
  const record = o.record ?? new FakeLiveRecord();
  const allocator = new LiveAllocator({
    own,
    record,
    entity: (key) => (key === 'plain' ? { delta: 1, remainder: 0, incumbent: null } : entity),
    incumbents: new Map(o.incumbents === false ? [] : [[row.kind, row]]),
    stride: o.stride ?? new IdStride(),
  });
  return { allocator, own, record };
}

/** The ids of a segment of numbers, as the entity's line makes them. */
const idsOf = (entity: LiveEntity, segment: { start: bigint; end: bigint }) => {
  const line = new IdStride().of(entity);
  const ids: bigint[] = [];
  for (let n = segment.start; n < segment.end; n++) ids.push(line.toId(n));
  return ids;
};

describe('LiveAllocator: a live entity reserves from its incumbent row (fakes, no I/O)', () => {
  it("an entity not live reserves from idpool's own table; the row is not touched", async () => {
    const row = new FakeIncumbentRow('leaf', 500n);
    const { allocator, own } = liveAllocator(row, LEAF);
    expect(await allocator.reserve('plain', 10)).toEqual({ start: 1000n, end: 1010n });
    expect(own.reservations).toHaveLength(1);
    expect(row.maxId).toBe(500n);
  });

  it("Leaf: a segment is the row's [max_id − size, max_id) after its update, recorded on idpool's row", async () => {
    const row = new FakeIncumbentRow('leaf', 301n);
    const { allocator, record, own } = liveAllocator(row, LEAF);
    const segment = await allocator.reserve('orders', 100);
    expect(segment).toEqual({ start: 301n, end: 401n });
    expect(row.maxId).toBe(401n);
    expect(record.recorded).toEqual([{ key: 'orders', start: 301n, end: 401n }]);
    expect(own.reservations).toEqual([]);
  });

  it('Tinyid: size numbers whose ids are the (max_id, max_id + size·delta] ≡ remainder the row moved over', async () => {
    const row = new FakeIncumbentRow('tinyid', 40n);
    const { allocator } = liveAllocator(row, TINYID);
    const ids = idsOf(TINYID, await allocator.reserve('items', 5));
    expect(row.maxId).toBe(50n);
    expect(ids).toEqual([41n, 43n, 45n, 47n, 49n]);
  });

  it('several instances and incumbent servers on one row, interleaved: no id from two of them, each ≡ remainder', async () => {
    for (const entity of [LEAF, TINYID]) {
      const row = new FakeIncumbentRow(entity.incumbent!.kind, 1n);
      const record = new FakeLiveRecord();
      const instances = [liveAllocator(row, entity, { record }), liveAllocator(row, entity, { record })];
      const seen = new Map<bigint, string>();
      const add = (ids: bigint[], by: string) => {
        for (const id of ids) {
          expect(seen.get(id), `id ${id} from ${by}`).toBeUndefined();
          seen.set(id, by);
        }
      };
      const key = entity.incumbent!.key;
      for (let round = 0; round < 20; round++) {
        // Concurrent reservations of both instances, then the incumbent's two servers.
        const segments = await Promise.all(instances.map((i) => i.allocator.reserve(key, 7 + round)));
        segments.forEach((s, i) => add(idsOf(entity, s), `instance ${i}`));
        add(row.serverTakes(10, entity), 'server 0');
        add(row.serverTakes(13, entity), 'server 1');
      }
      expect(seen.size).toBeGreaterThan(400);
      if (entity.delta > 1) for (const id of seen.keys()) expect(id % 2n).toBe(1n);
    }
  });

  it('the incumbent down: the reservation fails as unavailable (Retry-After), nothing recorded; back, it reserves again', async () => {
    const row = new FakeIncumbentRow('leaf', 1n);
    const { allocator, record } = liveAllocator(row, LEAF);
    row.down = new UnavailableError('the Leaf database this entity still reserves from is unavailable', 2);
    const failed = await allocator.reserve('orders', 10).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(UnavailableError);
    expect((failed as UnavailableError).retryAfterSeconds).toBe(2);
    expect(record.recorded).toEqual([]);
    row.down = undefined;
    expect(await allocator.reserve('orders', 10)).toEqual({ start: 1n, end: 11n });
  });

  it('no database for the incumbent, or a deployment stride that would respace its ids: unavailable, the row untouched', async () => {
    const row = new FakeIncumbentRow('tinyid', 1n);
    await expect(liveAllocator(row, TINYID, { incumbents: false }).allocator.reserve('items', 5)).rejects.toThrow(
      /IDPOOL_TINYID_DATABASE_URL/,
    );
    await expect(
      liveAllocator(row, TINYID, { stride: new IdStride(2, 0) }).allocator.reserve('items', 5),
    ).rejects.toThrow(/IDPOOL_CLUSTER_COUNT 2/);
    expect(row.maxId).toBe(1n);
  });

  it('--finish took the entity off while a reservation ran: the segment is refused (never handed out)', async () => {
    const row = new FakeIncumbentRow('leaf', 1n);
    const record = new FakeLiveRecord();
    record.live = false;
    const { allocator } = liveAllocator(row, LEAF, { record });
    await expect(allocator.reserve('orders', 10)).rejects.toThrow(/left its live cutover/);
  });
});

/** The admin API as `--finish` uses it: the live lines and the finish posts. */
function fakeAdmin(lines: { key: string; kind: IncumbentKind; source: string; delta?: number }[]) {
  const reserved = new Map(lines.map((l) => [l.key, 0n]));
  const finished: { key: string; firstId: string }[] = [];
  return {
    reserved,
    finished,
    api: {
      async get<T>(path: string): Promise<T> {
        expect(path).toBe('/admin/live');
        return {
          apps: lines
            .filter((l) => !finished.some((f) => f.key === l.key))
            .map((l) => ({
              key: l.key,
              incumbent: { kind: l.kind, key: l.source },
              delta: l.delta ?? 1,
              reservedFromIncumbent: String(reserved.get(l.key)),
            })),
        } as T;
      },
      async post<T>(path: string, body: unknown): Promise<T> {
        const key = decodeURIComponent(/^\/admin\/apps\/([^/]+)\/finish$/.exec(path)![1]);
        finished.push({ key, firstId: (body as { firstId: string }).firstId });
        return {} as T;
      },
    },
  };
}

const row = (key: string, maxId: bigint, delta = 1, remainder = 0): IncumbentRow => ({
  key,
  maxId,
  step: 100,
  description: null,
  delta,
  remainder,
  tokens: [],
});

describe('--finish: only once the rows move by no more than idpool reserved (fakes, no I/O)', () => {
  const quiet = { say: () => undefined };

  it("rows moved only by idpool's own reservations: each entity moves above its row's final value", async () => {
    const admin = fakeAdmin([
      { key: 'orders', kind: 'tinyid', source: 'orders_row', delta: 2 },
      { key: 'other', kind: 'tinyid', source: 'other_row' },
    ]);
    let orders = 1000n;
    const outcomes = await runFinish(
      admin.api,
      'tinyid',
      async () => [row('orders_row', orders, 2, 1), row('other_row', 7n)],
      {
        observeMs: 1000,
        // idpool reserves 50 numbers (100 ids at delta 2) during the window: the row moves by exactly that.
        sleep: async () => {
          orders += 100n;
          admin.reserved.set('orders', 50n);
        },
        ...quiet,
      },
    );
    expect(outcomes).toEqual([
      { key: 'orders', maxId: '1100', firstId: '1101' },
      { key: 'other', maxId: '7', firstId: '8' },
    ]);
    expect(admin.finished).toEqual([
      { key: 'orders', firstId: '1101' },
      { key: 'other', firstId: '8' },
    ]);
  });

  it('the incumbent still runs (its row moves beyond what idpool reserved) in every window: refused, nothing finished', async () => {
    const admin = fakeAdmin([{ key: 'orders', kind: 'leaf', source: 'orders' }]);
    let maxId = 1n;
    const said: string[] = [];
    const run = runFinish(admin.api, 'leaf', async () => [row('orders', maxId)], {
      observeMs: 1000,
      sleep: async () => void (maxId += 100n),
      say: (l) => said.push(l),
    });
    await expect(run).rejects.toBeInstanceOf(CliError);
    await expect(run).rejects.toThrow(/still issues ids: orders \(max_id \+100, idpool's \+0\)/);
    expect(admin.finished).toEqual([]);
    expect(said.filter((l) => l.startsWith('rows moved by others'))).toHaveLength(2);
  });

  it('one window blurred by a last in-flight reservation of the incumbent, then still: finished above the final value', async () => {
    const admin = fakeAdmin([{ key: 'orders', kind: 'leaf', source: 'orders' }]);
    let maxId = 1n;
    let windows = 0;
    const outcomes = await runFinish(admin.api, 'leaf', async () => [row('orders', maxId)], {
      observeMs: 1000,
      sleep: async () => {
        if (windows++ === 0) maxId += 100n;
      },
      ...quiet,
    });
    expect(outcomes).toEqual([{ key: 'orders', maxId: '101', firstId: '101' }]);
  });

  it('only the entities named: the others stay live', async () => {
    const admin = fakeAdmin([
      { key: 'a', kind: 'leaf', source: 'a' },
      { key: 'b', kind: 'leaf', source: 'b' },
    ]);
    const outcomes = await runFinish(admin.api, 'leaf', async () => [row('a', 5n), row('b', 9n)], {
      only: new Set(['b']),
      observeMs: 1000,
      sleep: async () => undefined,
      ...quiet,
    });
    expect(outcomes.map((o) => o.key)).toEqual(['b']);
    expect(admin.finished).toEqual([{ key: 'b', firstId: '9' }]);
  });
});

describe('held entities: served on no route until released (fake store, no I/O)', () => {
  it('held: every take refuses with 503 entity_held and the reason; released: served again, on every instance', async () => {
    const store = new FakeEntityStore();
    const clock = new FakeClock({ now: 1_000_000, sleep: 'advance' });
    const a = new EntityRegistry(store, clock);
    const b = new EntityRegistry(store, clock);
    await a.register({ key: 'orders', mode: 'monotonic' });
    const held = await a.setHeld('orders', 'its row moved during the import: run `idpool apps release KEY`');
    let refused: unknown;
    try {
      refuseHeld(held);
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({
      statusCode: 503,
      code: 'entity_held',
      retryAfterSeconds: 60,
      message: expect.stringContaining('idpool apps release orders'),
    });
    await b.refresh();
    expect(() => refuseHeld(b.get('orders')!)).toThrow(/held/);
    const released = await a.setHeld('orders', null);
    expect(() => refuseHeld(released)).not.toThrow();
    await b.refresh();
    expect(b.get('orders')!.held).toBeNull();
  });
});

// The same cases run against MariaDB in test/integration/store-contracts.test.ts.
describe('FakeIncumbentRow keeps the IncumbentDatabase contract', () => {
  incumbentDatabaseContract(async (kind) => new FakeIncumbentRow(kind, 1n));
});
