import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config';
import { UnavailableError } from '../../src/errors';
import { ClockBehindError, NoWorkerLeaseError, SequenceExhaustedError } from '../../src/snowflake/errors';
import { SnowflakeLayout, type SnowflakeSettings } from '../../src/snowflake/layout';
import { Snowflake } from '../../src/snowflake/snowflake';
import { Snowflake as PublicSnowflake } from '../../src';
import type { WorkerGrant, WorkerSource } from '../../src/snowflake/worker-source';
import { FakeClock } from '../support/clock';
import { seededRandom } from '../support/random';

const T0 = Date.UTC(2025, 5, 1, 12, 0, 0);

function make(
  clock: FakeClock,
  settings: Partial<SnowflakeSettings> = {},
  extra: Partial<ConstructorParameters<typeof Snowflake>[0]> = {},
) {
  const layout = SnowflakeLayout.create(settings, clock.wall);
  return new Snowflake({ layout, workerId: 5, clock, ...extra });
}

function expectUnique(ids: bigint[]): void {
  expect(new Set(ids).size).toBe(ids.length);
}

describe('clock rollback', () => {
  it('absorbs one rollback by flipping the time-back bit: no wait, no duplicate', async () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const sf = make(clock);
    const before: bigint[] = [];
    for (let ms = 0; ms < 5; ms++) {
      before.push(...(await sf.take('orders', 50)));
      clock.advance(1);
    }
    clock.jump(-3); // back into time already used with bit 0
    const after = await sf.take('orders', 200);
    expect(clock.sleeps).toEqual([]);
    const parts = after.map((id) => sf.decompose(id));
    expect(parts.every((p) => p.timeBack === 1)).toBe(true);
    expect(parts[0].timestamp).toBe(sf.layout.timestampAt(T0 + 2));
    expect(before.map((id) => sf.decompose(id).timeBack).every((b) => b === 0)).toBe(true);
    expectUnique([...before, ...after]);
  });

  it('a second rollback into time used by both bits waits until it is safe, never repeating', async () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const sf = make(clock, {}, { maxWaitMs: 1000 });
    const ids: bigint[] = [];
    for (let ms = 0; ms < 10; ms++) {
      ids.push(...(await sf.take('e', 20)));
      clock.advance(1);
    } // bit 0 used T0..T0+9
    clock.jump(-8); // first rollback: bit 1 from T0+2
    for (let ms = 0; ms < 4; ms++) {
      ids.push(...(await sf.take('e', 20)));
      clock.advance(1);
    } // bit 1 used T0+2..T0+5
    expect(clock.sleeps).toEqual([]);
    clock.jump(-5); // second rollback to T0+1: both bits have used it or later
    ids.push(...(await sf.take('e', 20)));
    // Bit 1 last used T0+5 (sequence 19) and can continue there: a 4 ms wait.
    expect(clock.sleeps).toEqual([4]);
    const last = sf.decompose(ids[ids.length - 1]);
    expect(last.timeBack).toBe(1);
    expect(last.timestamp).toBe(sf.layout.timestampAt(T0 + 5));
    expect(last.sequence).toBe(39);
    expectUnique(ids);
  });

  it('fails with a 503-style error when the wait would be longer than allowed, and issues nothing', async () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const sf = make(clock, {}, { maxWaitMs: 50, maxSpinMs: 5 });
    const ids = await sf.take('e', 10);
    clock.jump(-100);
    ids.push(...(await sf.take('e', 10))); // absorbed by bit 1
    clock.jump(-10_000);
    const err = await sf.take('e', 10).catch((e) => e);
    expect(err).toBeInstanceOf(ClockBehindError);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.statusCode).toBe(503);
    expect(err.retryAfterSeconds).toBe(10);
    expect(err.message).toMatch(/moved back a second time/);
    expect(() => sf.nextId('e')).toThrow(ClockBehindError);
    expect(clock.sleeps).toEqual([]);
    clock.advance(10_001);
    ids.push(...(await sf.take('e', 10)));
    expectUnique(ids);
  });
});

describe('sequence exhaustion', () => {
  // 41 ms bits, 10 worker bits, 5 reserved bits: 6 sequence bits, 64 ids per ms.
  const small = { reservedBits: 5, reservedValue: 17 };

  it('waits for the next time unit (async: sleeps the remaining time)', async () => {
    const clock = new FakeClock({ now: T0 + 0.25, sleep: 'advance' });
    const sf = make(clock, small);
    expect(sf.layout.maxSequence).toBe(63);
    const ids = await sf.take('e', 200);
    expect(clock.sleeps).toEqual([0.75, 1, 1]);
    const perUnit = new Map<number, number>();
    for (const id of ids) {
      const p = sf.decompose(id);
      expect(p.reserved).toBe(17);
      perUnit.set(p.timestamp, (perUnit.get(p.timestamp) ?? 0) + 1);
    }
    expect([...perUnit.values()]).toEqual([64, 64, 64, 8]);
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
  });

  it('busy-waits for the next unit in the sync API when that is short', () => {
    const clock = new FakeClock({ now: T0, tickMs: 0.01, sleep: 'advance' }); // every clock read moves time on 10 µs
    const sf = make(clock, small);
    const ids = Array.from({ length: 300 }, () => sf.nextId());
    expectUnique(ids);
    expect(clock.sleeps).toEqual([]);
    expect(new Set(ids.map((id) => sf.decompose(id).timestamp)).size).toBeGreaterThanOrEqual(5);
  });

  it('in a coarse unit the wait is long: it fails with Retry-After instead', async () => {
    // 37 s bits + 10 worker + 5 reserved: 10 sequence bits, 1024 ids per second.
    const clock = new FakeClock({ now: T0 + 100, sleep: 'advance' });
    const sf = make(
      clock,
      { timeUnit: 's', timestampBits: 37, workerBits: 10, reservedBits: 5 },
      { maxWaitMs: 500, maxSpinMs: 10 },
    );
    expect(sf.layout.maxSequence).toBe(1023);
    const ids = await sf.take('e', 1024);
    const err = await sf.take('e', 1).catch((e) => e);
    expect(err).toBeInstanceOf(SequenceExhaustedError);
    expect(err.retryAfterSeconds).toBe(1);
    expect(err.waitMs).toBe(900);
    expect(() => sf.nextId('e')).toThrow(SequenceExhaustedError);
    clock.advance(900);
    ids.push(...(await sf.take('e', 5)));
    expectUnique(ids);
  });
});

describe('sequences and workers', () => {
  it('each entity has its own sequence: one exhausting does not make another wait', async () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const sf = make(clock, { reservedBits: 5 });
    const a = await sf.take('a', 64);
    const b = await sf.take('b', 64);
    expect(clock.sleeps).toEqual([]);
    expect(a.map((id) => sf.decompose(id).sequence)).toEqual(b.map((id) => sf.decompose(id).sequence));
    await sf.take('a', 1);
    expect(clock.sleeps).toEqual([1]);
  });

  it('puts the worker id in every id and refuses one that does not fit the worker bits', () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const sf = make(clock, { workerBits: 4 }, { workerId: 15 });
    expect(sf.decompose(sf.nextId()).worker).toBe(15);
    expect(() => make(clock, { workerBits: 4 }, { workerId: 16 })).toThrow(ConfigError);
    expect(() => new Snowflake({ clock })).toThrow(/needs a worker id/);
  });

  it('returns numbers while the layout fits 53 bits, and refuses once ids pass 2^53', () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    // 51 ms bits with 3 worker bits: ids stay below 2^53 for ~69 years after the epoch.
    const numbers = make(clock, { timestampBits: 51, workerBits: 3 });
    const n = numbers.nextNumber('x');
    expect(typeof n).toBe('number');
    expect(Number.isSafeInteger(n)).toBe(true);
    expect(numbers.decompose(n)).toMatchObject({ worker: 5, sequence: 0, timestamp: numbers.layout.timestampAt(T0) });
    expect(BigInt(numbers.nextNumber('x'))).toBe(BigInt(n) + 1n);
    const wide = make(clock);
    expect(() => wide.nextNumber()).toThrow(/passed 2\^53/);
    expect(typeof wide.nextId()).toBe('bigint');
  });

  it('takeStrings gives the decimal forms, nextString the short ones', async () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const a = make(clock);
    const b = make(new FakeClock({ now: T0, sleep: 'advance' }));
    const strings = await a.takeStrings('e', 100);
    const ids = await b.take('e', 100);
    expect(strings).toEqual(ids.map(String));
    const hex = a.nextString('hex', 'e');
    expect(BigInt(`0x${hex}`)).toBe(BigInt(strings[99]) + 1n);
  });
});

describe('lease floor and ceiling', () => {
  class Source implements WorkerSource {
    grant: WorkerGrant | undefined;
    ceilingMs = Infinity;
    current(): WorkerGrant {
      if (!this.grant) throw new NoWorkerLeaseError('none');
      return this.grant;
    }
  }

  it('never issues at or before the recorded last timestamp of a new grant', async () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const source = new Source();
    source.grant = { workerId: 3, floorMs: T0 + 20 };
    const sf = make(clock, {}, { workerId: undefined, worker: source, maxWaitMs: 5 });
    const err = await sf.take('e', 1).catch((e) => e);
    expect(err).toBeInstanceOf(ClockBehindError);
    expect(err.message).toMatch(/last timestamp recorded for this worker/);
    const patient = make(clock, {}, { workerId: undefined, worker: source, maxWaitMs: 100 });
    const ids = await patient.take('e', 10);
    for (const id of ids) expect(patient.toTime(id).getTime()).toBeGreaterThan(T0 + 20);
    // A new grant (another worker id) restarts every sequence from its own floor.
    source.grant = { workerId: 4, floorMs: clock.wall + 3 };
    const next = await patient.take('e', 1);
    expect(patient.decompose(next[0]).worker).toBe(4);
    expect(patient.toTime(next[0]).getTime()).toBeGreaterThan(source.grant.floorMs);
  });

  it('stops when there is no grant, and when the clock passes what the lease recorded', async () => {
    const clock = new FakeClock({ now: T0, sleep: 'advance' });
    const source = new Source();
    const sf = make(clock, {}, { workerId: undefined, worker: source });
    expect(() => sf.nextId()).toThrow(NoWorkerLeaseError);
    source.grant = { workerId: 1, floorMs: 0 };
    source.ceilingMs = T0 + 10;
    await sf.take('e', 5);
    clock.advance(11);
    const err = await sf.take('e', 1).catch((e) => e);
    expect(err).toBeInstanceOf(NoWorkerLeaseError);
    source.ceilingMs = T0 + 10_000;
    expect((await sf.take('e', 1)).length).toBe(1);
    expect(sf.lastUsedMs()).toBe(T0 + 11);
  });
});

describe('random clock jitter', () => {
  it('1,000,000 ids under random rollbacks and jumps are unique', () => {
    const random = seededRandom(20241120);
    const clock = new FakeClock({ now: T0, tickMs: 0.0002, sleep: 'advance' }); // 5,000 clock reads per ms: the 2,048 sequence numbers of a ms run out too
    const sf = make(clock, {}, { maxSpinMs: 1_000 });
    const n = 1_000_000;
    const ids = new BigInt64Array(n);
    let rollbacks = 0;
    for (let i = 0; i < n; i++) {
      if (random() < 0.0005) {
        // Steps of -20..+20 ms, like NTP corrections; most go back into used time.
        const step = Math.round((random() - 0.5) * 40);
        if (step < 0) rollbacks++;
        clock.jump(step);
      }
      ids[i] = sf.nextId(i % 3 === 0 ? 'a' : undefined) + (i % 3 === 0 ? 1n << 63n : 0n);
    }
    expect(rollbacks).toBeGreaterThan(100);
    // Two sequences ("a" and the default) may share values; keep them apart with the sign bit.
    ids.sort();
    let duplicates = 0;
    for (let i = 1; i < n; i++) if (ids[i] === ids[i - 1]) duplicates++;
    expect(duplicates).toBe(0);
    const bits = new Set<number>();
    for (let i = 0; i < n; i += 997) bits.add(sf.decompose(ids[i] & ((1n << 63n) - 1n)).timeBack);
    expect(bits).toEqual(new Set([0, 1]));
  });
});

describe('Snowflake.fromEnv (public surface)', () => {
  it('reads the worker id and layout from IDPOOL_* variables, and names IDPOOL_WORKER_ID when it is missing', () => {
    const generator = PublicSnowflake.fromEnv(
      { IDPOOL_WORKER_ID: '7', IDPOOL_SNOWFLAKE_WORKER_BITS: '5' },
      { clock: new FakeClock({ now: T0, sleep: 'advance' }) },
    );
    expect(generator.layout.settings).toMatchObject({ workerBits: 5, timeUnit: 'ms', timestampBits: 41 });
    expect(generator.decompose(generator.nextId()).worker).toBe(7);
    const err = (() => {
      try {
        PublicSnowflake.fromEnv({});
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe('IDPOOL_WORKER_ID');
  });
});
