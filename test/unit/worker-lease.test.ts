import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger';
import { NoWorkerLeaseError } from '../../src/snowflake/errors';
import { Snowflake } from '../../src/snowflake/snowflake';
import { FakeWorkerStore } from '../../src/worker/fake-worker-store';
import { ClockSkewError } from '../../src/snowflake/errors';
import { WorkerLease, type WorkerLeaseOptions } from '../../src/worker/lease';
import { FakeClock } from '../support/clock';

const T0 = Date.UTC(2025, 5, 1, 12, 0, 0);
const TIMING = { ttlMs: 10_000, marginMs: 2_000, heartbeatSeconds: 2, maxClockSkewMs: 1_000 };

function setup() {
  const clock = new FakeClock({ now: T0, sleep: 'advance' });
  const store = new FakeWorkerStore(() => clock.wall);
  const lease = (overrides: Partial<WorkerLeaseOptions> = {}) =>
    new WorkerLease({
      ...TIMING,
      store,
      clock,
      log: silentLogger,
      min: 1,
      max: 3,
      preferSameCode: false,
      code: '10.0.0.1:8080#aa:bb',
      ...overrides,
    });
  return { clock, store, lease };
}

describe('WorkerLease', () => {
  it('gives concurrent instances distinct worker ids and creates each row once', async () => {
    const { store, lease } = setup();
    const leases = [lease({ code: 'a' }), lease({ code: 'b' }), lease({ code: 'c' })];
    await Promise.all(leases.map((l) => l.start()));
    expect(leases.map((l) => l.workerId).sort()).toEqual([1, 2, 3]);
    expect([...store.table.keys()].sort()).toEqual([1, 2, 3]);
    expect([...store.table.values()].map((r) => r.leaseVersion)).toEqual([1, 1, 1]);
  });

  it('records a ceiling (now + TTL) before using it, and raises it on every renewal', async () => {
    const { clock, store, lease } = setup();
    const l = lease();
    await l.start();
    expect(store.table.get(l.workerId!)!.lastTimestamp).toBe(T0 + TIMING.ttlMs);
    expect(l.ceilingMs).toBe(T0 + TIMING.ttlMs);
    clock.advance(2_000);
    await l.heartbeat();
    expect(store.table.get(l.workerId!)!.lastTimestamp).toBe(T0 + 2_000 + TIMING.ttlMs);
    expect(l.ceilingMs).toBe(T0 + 2_000 + TIMING.ttlMs);
  });

  it('when every worker id is taken: a clear reason, and it keeps trying on each heartbeat', async () => {
    const { clock, lease } = setup();
    const holders = [lease({ max: 2 }), lease({ max: 2 })];
    for (const h of holders) await h.start();
    const late = lease({ max: 2 });
    await late.start();
    expect(late.workerId).toBeUndefined();
    expect(late.status()).toEqual({
      ok: false,
      detail: expect.stringMatching(/every worker id in 1\.\.2 is leased by a live instance/),
    });
    expect(() => late.current()).toThrow(NoWorkerLeaseError);
    await holders[0].stop();
    clock.advance(1);
    await late.heartbeat();
    expect(late.status().ok).toBe(true);
    expect(late.workerId).toBe(holders[0].workerId ?? 1);
  });

  it('stops issuing once not renewed within TTL minus margin (monotonic clock), and resumes on renewal', async () => {
    const { clock, lease } = setup();
    const l = lease();
    await l.start();
    const sf = new Snowflake({ worker: l, clock });
    expect((await sf.take('e', 3)).length).toBe(3);
    clock.advance(TIMING.ttlMs - TIMING.marginMs - 1);
    expect((await sf.take('e', 1)).length).toBe(1);
    clock.advance(1);
    await expect(sf.take('e', 1)).rejects.toThrow(/not renewed within its TTL minus margin/);
    expect(l.status().ok).toBe(false);
    // Nobody took the row meanwhile: the renewal succeeds and issuing resumes.
    await l.heartbeat();
    expect(l.status().ok).toBe(true);
    expect((await sf.take('e', 1)).length).toBe(1);
  });

  it('a wall-clock rollback does not extend the lease: validity is measured on the monotonic clock', async () => {
    const { clock, lease } = setup();
    const l = lease();
    await l.start();
    clock.advance(TIMING.ttlMs - TIMING.marginMs);
    clock.jump(-60_000);
    expect(() => l.current()).toThrow(NoWorkerLeaseError);
  });

  it('after a lapse another instance takes the worker id; the ids of the two never collide and the old one issues nothing', async () => {
    const { clock, store, lease } = setup();
    const a = lease({ max: 1, code: 'a' });
    await a.start();
    const sfA = new Snowflake({ worker: a, clock, maxWaitMs: 60_000 });
    const idsA: bigint[] = [];
    for (let i = 0; i < 5; i++) {
      idsA.push(...(await sfA.take('e', 100)));
      clock.advance(1_000);
    }
    // A stops heartbeating (SIGSTOP, GC pause) past the TTL.
    clock.advance(TIMING.ttlMs);
    const b = lease({ max: 1, code: 'b' });
    await b.start();
    expect(b.workerId).toBe(1);
    const row = store.table.get(1)!;
    expect(row.code).toBe('b');
    // B starts after A's recorded ceiling; even with the wall clock set back, it waits for it.
    // A never renewed, so its ceiling is the one recorded when it acquired.
    const aCeiling = T0 + TIMING.ttlMs;
    expect(clock.wall - 6_000).toBeLessThan(aCeiling);
    clock.jump(-6_000);
    const sfB = new Snowflake({ worker: b, clock, maxWaitMs: 60_000 });
    const idsB = await sfB.take('e', 500);
    expect(clock.sleeps.length).toBeGreaterThan(0);
    for (const id of idsB) expect(sfB.toTime(id).getTime()).toBeGreaterThan(aCeiling);
    // A wakes up: it issues nothing, its renewal fails and it finds no free worker id.
    await expect(sfA.take('e', 1)).rejects.toThrow(NoWorkerLeaseError);
    await a.heartbeat();
    expect(a.status()).toEqual({ ok: false, detail: expect.stringMatching(/every worker id in 1\.\.1/) });
    await expect(sfA.take('e', 1)).rejects.toThrow(NoWorkerLeaseError);
    expect(new Set([...idsA, ...idsB]).size).toBe(idsA.length + idsB.length);
  });

  it('release records the last timestamp actually used; the same code gets its row back when it prefers it', async () => {
    const { clock, store, lease } = setup();
    const first = lease({ code: 'me', preferSameCode: true });
    await first.start();
    const sf = new Snowflake({ worker: first, clock });
    first.trackUsage(() => sf.lastUsedMs());
    const held = first.workerId!;
    // Make the row the least attractive by last timestamp: preference must still win.
    clock.advance(3_000);
    await sf.take('e', 10);
    await first.stop();
    expect(store.table.get(held)).toMatchObject({ heartbeatAt: 0, lastTimestamp: T0 + 3_000 });
    const other = lease({ code: 'someone-else' });
    await other.start();
    expect(other.workerId).not.toBe(held);
    const again = lease({ code: 'me', preferSameCode: true });
    await again.start();
    expect(again.workerId).toBe(held);
    const sf2 = new Snowflake({ worker: again, clock, maxWaitMs: 10 });
    const [id] = await sf2.take('e', 1);
    expect(sf2.toTime(id).getTime()).toBeGreaterThan(T0 + 3_000);
    // Without the preference, the least recently used row is taken.
    await again.stop();
    const plain = lease({ code: 'me' });
    await plain.start();
    expect(plain.workerId).not.toBe(held);
  });

  it('refuses to start when the local clock and the database clock differ by more than the allowed skew', async () => {
    const { clock, lease } = setup();
    const skewed = new FakeWorkerStore(() => clock.wall + 5_000);
    const l = lease({ store: skewed, code: 'x' });
    const err = await l.start().catch((e) => e);
    expect(err).toBeInstanceOf(ClockSkewError);
    expect(err.message).toMatch(/5000 ms behind the database's.*IDPOOL_MAX_CLOCK_SKEW_MS=1000/);
    expect(skewed.table.size).toBe(0);
    const fine = lease({ store: new FakeWorkerStore(() => clock.wall + 900), code: 'x' });
    await fine.start();
    expect(fine.status().ok).toBe(true);
  });

  it('a heartbeat on a slow database stops trying rows at the next heartbeat time, so heartbeats are never skipped for long', async () => {
    const { clock, store, lease } = setup();
    let attempts = 0;
    // Every conditional UPDATE takes 1.5 s and loses the race.
    store.acquire = async () => {
      attempts++;
      clock.advance(1_500);
      return false;
    };
    const l = lease({ max: 3 });
    await store.ensureRows(1, 3);
    await l.heartbeat();
    // heartbeatSeconds 2: tries at +0 s and +1.5 s; the third row would start after the next heartbeat is due.
    expect(attempts).toBe(2);
    expect(l.workerId).toBeUndefined();
  });

  it('a heartbeat that cannot reach the database keeps the lease until it lapses', async () => {
    const { clock, store, lease } = setup();
    const l = lease();
    await l.start();
    store.down = true;
    clock.advance(4_000);
    await l.heartbeat();
    expect(l.status().ok).toBe(true);
    clock.advance(4_000);
    await l.heartbeat();
    expect(l.status().ok).toBe(false);
    store.down = false;
    await l.heartbeat();
    expect(l.status().ok).toBe(true);
  });
});
