import { expect, it } from 'vitest';
import type { WorkerStore } from '../../../src/worker/worker-store';

const TTL_MS = 60_000;

/**
 * What every {@link WorkerStore} does, run against the SQL store and
 * `FakeWorkerStore` alike: rows created once, a lease taken only by the one
 * who read the row's current version after it expired, renewed and released
 * only by its holder, `last_timestamp` never lowered by a renewal.
 */
export function workerStoreContract(make: () => Promise<WorkerStore>): void {
  it('creates rows min..max once, however many callers ask at once', async () => {
    const store = await make();
    await Promise.all([store.ensureRows(1, 4), store.ensureRows(1, 4), store.ensureRows(3, 6)]);
    const { rows } = await store.rows(1, 6);
    expect(rows.map((r) => r.workerId)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const r of rows) expect(r).toMatchObject({ leaseVersion: 0, heartbeatAt: 0, lastTimestamp: 0 });
    expect((await store.rows(2, 3)).rows.map((r) => r.workerId)).toEqual([2, 3]);
  });

  it('acquire takes a free row once: a stale read or a live lease is refused', async () => {
    const store = await make();
    await store.ensureRows(1, 1);
    const [free] = (await store.rows(1, 1)).rows;
    const ceiling = (await store.nowMs()) + TTL_MS;
    const results = await Promise.all([
      store.acquire(free, 'a', TTL_MS, ceiling),
      store.acquire(free, 'b', TTL_MS, ceiling),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const [held] = (await store.rows(1, 1)).rows;
    expect(held.leaseVersion).toBe(1);
    expect(['a', 'b']).toContain(held.code);
    expect(held.heartbeatAt).toBeGreaterThan(0);
    expect(held.lastTimestamp).toBeGreaterThanOrEqual(Math.floor(ceiling));
    // Read again, current version, but the lease is live.
    expect(await store.acquire(held, 'c', TTL_MS, ceiling)).toBe(false);
  });

  it('renew and release only for the holder; a renewal never lowers last_timestamp', async () => {
    const store = await make();
    await store.ensureRows(1, 1);
    const [free] = (await store.rows(1, 1)).rows;
    const now = await store.nowMs();
    expect(await store.acquire(free, 'a', TTL_MS, now + TTL_MS)).toBe(true);
    expect(await store.renew(1, 0, now + 2 * TTL_MS)).toBe(false);
    expect(await store.renew(1, 1, now + 2 * TTL_MS)).toBe(true);
    expect(await store.renew(1, 1, now + 10)).toBe(true);
    expect((await store.rows(1, 1)).rows[0].lastTimestamp).toBe(Math.floor(now + 2 * TTL_MS));
    expect(await store.release(1, 0, now)).toBe(false);
    expect(await store.release(1, 1, now + 5)).toBe(true);
    const [released] = (await store.rows(1, 1)).rows;
    expect(released).toMatchObject({ heartbeatAt: 0, lastTimestamp: Math.floor(now + 5), leaseVersion: 1 });
    // Released: free for the next reader of the current version.
    expect(await store.acquire(released, 'b', TTL_MS, now + TTL_MS)).toBe(true);
  });
}
