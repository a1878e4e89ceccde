import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger';
import { NoWorkerLeaseError } from '../../src/snowflake/errors';
import { Snowflake } from '../../src/snowflake/snowflake';
import { FakeWorkerHolders } from '../../src/worker/fake-worker-holders';
import { FakeWorkerStore } from '../../src/worker/fake-worker-store';
import { WorkerLease, type WorkerLeaseOptions } from '../../src/worker/lease';
import type { WorkerRow } from '../../src/worker/worker-store';
import { FakeClock } from '../support/clock';

const T0 = Date.UTC(2025, 5, 1, 12, 0, 0);
const TIMING = { ttlMs: 10_000, marginMs: 2_000, heartbeatSeconds: 2, maxClockSkewMs: 1_000 };

function setup(withHolders: boolean) {
  const clock = new FakeClock({ now: T0, sleep: 'advance' });
  const store = new FakeWorkerStore(() => clock.wall);
  const holders = new FakeWorkerHolders();
  const lease = (code: string, overrides: Partial<WorkerLeaseOptions> = {}) =>
    new WorkerLease({
      ...TIMING,
      store,
      holders: withHolders ? holders : undefined,
      clock,
      log: silentLogger,
      min: 1,
      max: 1,
      preferSameCode: false,
      code,
      ...overrides,
    });
  /** A copy of the `worker` table, as a backup holds it. */
  const backup = () => new Map([...store.table].map(([id, row]): [number, WorkerRow] => [id, { ...row }]));
  const restore = (rows: Map<number, WorkerRow>) => {
    store.table.clear();
    for (const [id, row] of rows) store.table.set(id, { ...row });
  };
  return { clock, store, holders, lease, backup, restore };
}

/** A backup in which worker 1 was leased once and given back (lease_version 1, free), then holder `a` leasing it (version 2). */
async function backupThenHolder(withHolders: boolean) {
  const parts = setup(withHolders);
  const first = parts.lease('first');
  await first.start();
  await first.stop();
  const taken = parts.backup();
  const a = parts.lease('a');
  await a.start();
  return { ...parts, a, restoreBackup: () => parts.restore(taken) };
}

/** A restore that takes worker 1 back to before `a` leased it, a newcomer that takes it, and both generators. */
async function restoreUnderHolder(withHolders: boolean) {
  const { clock, lease, a, restoreBackup } = await backupThenHolder(withHolders);
  const sfA = new Snowflake({ worker: a, clock, maxWaitMs: 60_000 });
  const idsA: bigint[] = [];
  for (let i = 0; i < 4; i++) {
    idsA.push(...(await sfA.take('e', 100)));
    clock.advance(TIMING.heartbeatSeconds * 1000);
    await a.heartbeat();
  }
  restoreBackup();
  const b = lease('b');
  await b.start();
  const sfB = new Snowflake({ worker: b, clock, maxWaitMs: 1_000 });
  return { clock, a, b, sfA, sfB, idsA };
}

describe('WorkerLease across a database restore (issue 29, bug 3)', () => {
  it('with the second record: the newcomer starts above the ceiling the holder recorded, and the holder stops at its next renewal', async () => {
    const { clock, a, b, sfA, sfB, idsA } = await restoreUnderHolder(true);
    expect(b.workerId).toBe(1);
    // Until its next renewal the holder issues, below its ceiling.
    idsA.push(...(await sfA.take('e', 100)));
    // The newcomer waits, heartbeating, for its clock to pass the holder's ceiling.
    const aCeiling = a.ceilingMs;
    let refused = 0;
    while (clock.wall <= aCeiling - 1_000) {
      await expect(sfB.take('e', 1)).rejects.toThrow(/behind the last timestamp recorded/);
      refused++;
      clock.advance(TIMING.heartbeatSeconds * 1000);
      await b.heartbeat();
    }
    expect(refused).toBeGreaterThan(0);
    // The restored row says version 1, the newcomer bumped it to 2: the holder's version. The row alone would renew it.
    const idsB = await sfB.take('e', 300);
    for (const id of idsB) expect(sfB.toTime(id).getTime()).toBeGreaterThan(aCeiling);
    await a.heartbeat();
    expect(a.status()).toEqual({
      ok: false,
      detail: expect.stringMatching(/every worker id in 1\.\.1 is leased by a live instance/),
    });
    await expect(sfA.take('e', 1)).rejects.toThrow(NoWorkerLeaseError);
    // The newcomer keeps it.
    clock.advance(TIMING.heartbeatSeconds * 1000);
    await b.heartbeat();
    idsB.push(...(await sfB.take('e', 100)));
    expect(new Set([...idsA, ...idsB]).size).toBe(idsA.length + idsB.length);
  });

  it('without it (embedded, library): the same restore lets both issue on worker 1 from the same time, the same ids', async () => {
    const { a, sfA, sfB, idsA } = await restoreUnderHolder(false);
    const idsB = await sfB.take('e', 300);
    await a.heartbeat();
    expect(a.status().ok).toBe(true);
    const again = await sfA.take('e', 100);
    expect(new Set([...idsA, ...again, ...idsB]).size).toBeLessThan(idsA.length + again.length + idsB.length);
  });

  it('a holder whose renewal the restored row refuses takes the worker id back at once, above what it used, not its ceiling', async () => {
    const { clock, holders, a, restoreBackup } = await backupThenHolder(true);
    const sf = new Snowflake({ worker: a, clock, maxWaitMs: 0 });
    const before = await sf.take('e', 100);
    clock.advance(TIMING.heartbeatSeconds * 1000);
    restoreBackup();
    await a.heartbeat();
    expect(a.workerId).toBe(1);
    expect(a.current().floorMs).toBeLessThan(clock.wall);
    expect(holders.ceilingOf.get(1)).toBe(clock.wall + TIMING.ttlMs);
    // No wait (maxWaitMs 0): the new grant's floor is the last time unit used.
    const after = await sf.take('e', 100);
    expect(new Set([...before, ...after]).size).toBe(200);
  });

  it('a clean stop brings the ceiling down to what was used, so the next holder does not wait for a ceiling nobody used', async () => {
    const { clock, holders, lease } = setup(true);
    const a = lease('a');
    await a.start();
    const sf = new Snowflake({ worker: a, clock });
    await sf.take('e', 10);
    a.trackUsage(() => sf.lastUsedMs());
    await a.stop();
    expect(holders.ceilingOf.get(1)).toBe(T0);
    expect(holders.holders.has(1)).toBe(false);
    clock.advance(1);
    const b = lease('b');
    await b.start();
    expect(b.current().floorMs).toBe(T0);
  });

  it('a renewal Redis cannot answer does not extend the lease: it lapses after TTL minus margin', async () => {
    const { clock, holders, lease } = setup(true);
    const a = lease('a');
    await a.start();
    holders.down = true;
    for (let i = 0; i < 4; i++) {
      clock.advance(TIMING.heartbeatSeconds * 1000);
      await a.heartbeat();
    }
    expect(a.status().ok).toBe(false);
    expect(a.ceilingMs).toBe(T0 + TIMING.ttlMs);
    holders.down = false;
    await a.heartbeat();
    expect(a.status().ok).toBe(true);
  });

  it('a grant Redis cannot record is given back at once', async () => {
    const { store, holders, lease } = setup(true);
    holders.claim = () => Promise.reject(new Error('redis unreachable'));
    const a = lease('a');
    await expect(a.start()).rejects.toThrow(/redis unreachable/);
    expect(a.workerId).toBeUndefined();
    expect(store.table.get(1)).toMatchObject({ leaseVersion: 1, heartbeatAt: 0, lastTimestamp: T0 + TIMING.ttlMs });
  });
});
