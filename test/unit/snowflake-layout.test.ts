import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config';
import { decodeId, encodeId, type IdEncoding } from '../../src/snowflake/encoding';
import { SnowflakeLayout, TIMESTAMP_BITS, type TimeUnit, UNIT_MS } from '../../src/snowflake/layout';

const NOW = Date.UTC(2025, 5, 1);
const UNITS = Object.keys(TIMESTAMP_BITS) as TimeUnit[];

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('layout bounds (docs/design.md table)', () => {
  for (const unit of UNITS) {
    const [min, max] = TIMESTAMP_BITS[unit];
    it(`${unit}: ${min} and ${max} timestamp bits are accepted, ${min - 1} and ${max + 1} refused naming the variable and range`, () => {
      // 3 worker bits leave room for the widest timestamps.
      for (const bits of [min, max]) {
        const layout = SnowflakeLayout.create({ timeUnit: unit, timestampBits: bits, workerBits: 3 }, NOW);
        expect(layout.settings.timestampBits).toBe(bits);
        expect(layout.sequenceBits).toBe(63 - 1 - bits - 3);
      }
      for (const bits of [min - 1, max + 1]) {
        const err = configError(() =>
          SnowflakeLayout.create({ timeUnit: unit, timestampBits: bits, workerBits: 3 }, NOW),
        );
        expect(err.variable).toBe('IDPOOL_SNOWFLAKE_TIMESTAMP_BITS');
        expect(err.message).toContain(`from ${min} to ${max}`);
        expect(err.message).toContain(String(bits));
      }
    });
  }

  it('worker bits 3..10', () => {
    expect(SnowflakeLayout.create({ workerBits: 3 }, NOW).maxWorker).toBe(7);
    expect(SnowflakeLayout.create({ workerBits: 10 }, NOW).maxWorker).toBe(1023);
    for (const bits of [2, 11])
      expect(configError(() => SnowflakeLayout.create({ workerBits: bits }, NOW)).variable).toBe(
        'IDPOOL_SNOWFLAKE_WORKER_BITS',
      );
  });

  it('reserved bits 0..5, and a reserved value that does not fit them is refused', () => {
    expect(
      SnowflakeLayout.create({ reservedBits: 5, reservedValue: 31, workerBits: 5 }, NOW).settings.reservedValue,
    ).toBe(31);
    expect(configError(() => SnowflakeLayout.create({ reservedBits: 6 }, NOW)).variable).toBe(
      'IDPOOL_SNOWFLAKE_RESERVED_BITS',
    );
    const tooWide = configError(() => SnowflakeLayout.create({ reservedBits: 2, reservedValue: 4 }, NOW));
    expect(tooWide.variable).toBe('IDPOOL_SNOWFLAKE_RESERVED_VALUE');
    expect(tooWide.message).toContain('from 0 to 3');
    expect(configError(() => SnowflakeLayout.create({ reservedBits: 0, reservedValue: 1 }, NOW)).variable).toBe(
      'IDPOOL_SNOWFLAKE_RESERVED_VALUE',
    );
  });

  it('region bits 0..8 hold IDPOOL_REGION, between the timestamp and the worker, taken from the sequence', () => {
    const layout = SnowflakeLayout.create({ regionBits: 2, region: 2 }, NOW);
    expect(layout.sequenceBits).toBe(9);
    const id = layout.compose({ timestamp: 5, worker: 7, timeBack: 0, sequence: 3 });
    expect(layout.decompose(id)).toMatchObject({ timestamp: 5, region: 2, worker: 7, sequence: 3 });
    expect(id >> BigInt(layout.regionShift)).toBe(5n * 4n + 2n);
    // The same worker and time in another region is another id.
    expect(
      SnowflakeLayout.create({ regionBits: 2, region: 1 }, NOW).compose({
        timestamp: 5,
        worker: 7,
        timeBack: 0,
        sequence: 3,
      }),
    ).not.toBe(id);
    expect(layout.describe()).toContain('| region 2=2 |');
    expect(() => SnowflakeLayout.create({ regionBits: 9 }, NOW)).toThrow(
      /IDPOOL_SNOWFLAKE_REGION_BITS: must be an integer from 0 to 8/,
    );
    expect(() => SnowflakeLayout.create({ regionBits: 2, region: 4 }, NOW)).toThrow(
      /IDPOOL_REGION: must be an integer from 0 to 3 \(it must fit 2 region bits\), got 4/,
    );
    expect(() => SnowflakeLayout.create({ region: 1 }, NOW)).toThrow(/IDPOOL_REGION: must be an integer from 0 to 0/);
    expect(configError(() => loadConfig({ IDPOOL_SNOWFLAKE_REGION_BITS: '1', IDPOOL_REGION: '2' })).variable).toBe(
      'IDPOOL_REGION',
    );
  });

  it('fewer than 1 sequence bit is refused; exactly 1 is accepted', () => {
    // 50 + 10 + 1 = 61: one sequence bit left.
    expect(SnowflakeLayout.create({ timestampBits: 50, workerBits: 10, reservedBits: 1 }, NOW).sequenceBits).toBe(1);
    const err = configError(() => SnowflakeLayout.create({ timestampBits: 50, workerBits: 10, reservedBits: 2 }, NOW));
    expect(err.variable).toBe('IDPOOL_SNOWFLAKE_TIMESTAMP_BITS');
    expect(err.message).toMatch(/0 sequence bits/);
    expect(err.message).toMatch(/at most 49/);
  });

  it('an epoch in the future is refused; one in the past is fine', () => {
    const err = configError(() => SnowflakeLayout.create({ epochMs: NOW + 60_000 }, NOW));
    expect(err.variable).toBe('IDPOOL_SNOWFLAKE_EPOCH');
    expect(err.message).toMatch(/future/);
    expect(SnowflakeLayout.create({ epochMs: NOW - 1 }, NOW).timestampAt(NOW)).toBe(1);
  });

  it('a layout that has already run out of time is refused', () => {
    // 41 bits of ms since 1970 ran out in September 2039.
    const err = configError(() => SnowflakeLayout.create({ timestampBits: 41, epochMs: 0 }, Date.UTC(2040, 0, 1)));
    expect(err.variable).toBe('IDPOOL_SNOWFLAKE_TIMESTAMP_BITS');
    expect(err.message).toMatch(/ran out on 2039-09-07/);
    expect(() => SnowflakeLayout.create({ timestampBits: 42, epochMs: 0 }, Date.UTC(2040, 0, 1))).not.toThrow();
  });

  it('environment values reach the same checks, naming the variable', () => {
    const fromEnv = (env: Record<string, string>) =>
      SnowflakeLayout.create(loadConfig({ IDPOOL_ADMIN_TOKEN: 'x'.repeat(32), ...env }).snowflake, NOW);
    expect(
      configError(() => fromEnv({ IDPOOL_SNOWFLAKE_TIME_UNIT: 's', IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '30' })).message,
    ).toMatch(/^IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: .*31 to 55.* unit s/);
    expect(configError(() => fromEnv({ IDPOOL_SNOWFLAKE_TIME_UNIT: 'week' })).variable).toBe(
      'IDPOOL_SNOWFLAKE_TIME_UNIT',
    );
    expect(configError(() => fromEnv({ IDPOOL_SNOWFLAKE_EPOCH: '2999-01-01T00:00:00Z' })).variable).toBe(
      'IDPOOL_SNOWFLAKE_EPOCH',
    );
    expect(
      configError(() => fromEnv({ IDPOOL_SNOWFLAKE_RESERVED_BITS: '1', IDPOOL_SNOWFLAKE_RESERVED_VALUE: '2' }))
        .variable,
    ).toBe('IDPOOL_SNOWFLAKE_RESERVED_VALUE');
    expect(fromEnv({ IDPOOL_SNOWFLAKE_TIME_UNIT: 'd', IDPOOL_SNOWFLAKE_TIMESTAMP_BITS: '15' }).unitMs).toBe(86_400_000);
  });

  it('lease and wait settings out of range are refused naming the variable', () => {
    expect(loadConfig({}).lease).toEqual({
      ttlMs: 15_000,
      marginMs: 3_000,
      heartbeatSeconds: 3,
      maxClockSkewMs: 1_000,
      maxWaitMs: 1_000,
      clockCheckMs: 5_000,
    });
    const cases: [Record<string, string>, string][] = [
      [{ IDPOOL_WORKER_LEASE_TTL_MS: 'soon' }, 'IDPOOL_WORKER_LEASE_TTL_MS'],
      [{ IDPOOL_WORKER_LEASE_TTL_MS: '999' }, 'IDPOOL_WORKER_LEASE_TTL_MS'],
      [{ IDPOOL_WORKER_LEASE_TTL_MS: '5000', IDPOOL_WORKER_LEASE_MARGIN_MS: '4000' }, 'IDPOOL_WORKER_LEASE_MARGIN_MS'],
      // 15 s TTL − 3 s margin leaves 12 s: a 7 s heartbeat would not fit twice.
      [{ IDPOOL_WORKER_HEARTBEAT_SECONDS: '7' }, 'IDPOOL_WORKER_HEARTBEAT_SECONDS'],
      [{ IDPOOL_MAX_CLOCK_SKEW_MS: '-1' }, 'IDPOOL_MAX_CLOCK_SKEW_MS'],
      [{ IDPOOL_SNOWFLAKE_MAX_WAIT_MS: '1e3' }, 'IDPOOL_SNOWFLAKE_MAX_WAIT_MS'],
      [{ IDPOOL_CLOCK_CHECK_MS: '-5' }, 'IDPOOL_CLOCK_CHECK_MS'],
    ];
    for (const [env, variable] of cases) expect(configError(() => loadConfig(env).lease).variable).toBe(variable);
    expect(
      loadConfig({ IDPOOL_WORKER_LEASE_TTL_MS: '3000', IDPOOL_WORKER_LEASE_MARGIN_MS: '1000' }).lease.heartbeatSeconds,
    ).toBe(1);
  });
});

/** A valid layout: unit, timestamp bits within its bounds, region, worker and reserved bits leaving ≥ 1 sequence bit. */
const layoutArb = fc
  .record({
    timeUnit: fc.constantFrom(...UNITS),
    tsOffset: fc.nat(40),
    workerBits: fc.integer({ min: 3, max: 10 }),
    reservedBits: fc.integer({ min: 0, max: 5 }),
    reservedSeed: fc.nat(),
    regionBits: fc.integer({ min: 0, max: 8 }),
    regionSeed: fc.nat(),
  })
  .map(({ timeUnit, tsOffset, workerBits, reservedBits, reservedSeed, regionBits, regionSeed }) => {
    const [min, max] = TIMESTAMP_BITS[timeUnit];
    const timestampBits = min + (tsOffset % (max - min + 1));
    return {
      timeUnit,
      timestampBits,
      workerBits,
      reservedBits,
      reservedValue: reservedSeed % 2 ** reservedBits,
      regionBits,
      region: regionSeed % 2 ** regionBits,
      epochMs: Date.UTC(2024, 0, 1),
    };
  })
  .filter((s) => 62 - s.timestampBits - s.regionBits - s.workerBits - s.reservedBits >= 1)
  .map((s) => SnowflakeLayout.create(s, NOW));

const partsArb = (l: SnowflakeLayout) =>
  fc.record({
    timestamp: fc.integer({ min: 0, max: l.maxTimestamp }),
    worker: fc.integer({ min: 0, max: l.maxWorker }),
    timeBack: fc.constantFrom(0 as const, 1 as const),
    sequence: fc.integer({ min: 0, max: l.maxSequence }),
  });

describe('compose / decompose', () => {
  it('round-trips every field of every valid layout, and ids are 63-bit', () => {
    fc.assert(
      fc.property(
        layoutArb.chain((l) => fc.tuple(fc.constant(l), partsArb(l))),
        ([layout, parts]) => {
          const id = layout.compose(parts);
          expect(id >= 0n && id < 2n ** 63n).toBe(true);
          expect(layout.decompose(id)).toEqual({
            ...parts,
            region: layout.settings.region,
            reserved: layout.settings.reservedValue,
          });
          expect(layout.decompose(id.toString())).toEqual(layout.decompose(id));
          const ms = layout.settings.epochMs + parts.timestamp * UNIT_MS[layout.settings.timeUnit];
          if (ms <= 8.64e15) expect(layout.toTime(id).getTime()).toBe(ms);
          else expect(() => layout.toTime(id)).toThrow(/beyond what a Date can hold/);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('orders ids like (timestamp, worker, timeBack, sequence)', () => {
    fc.assert(
      fc.property(
        layoutArb.chain((l) => fc.tuple(fc.constant(l), partsArb(l), partsArb(l))),
        ([layout, a, b]) => {
          const key = (p: typeof a) => [p.timestamp, p.worker, p.timeBack, p.sequence];
          const ka = key(a);
          const kb = key(b);
          const i = ka.findIndex((v, j) => v !== kb[j]);
          const expected = i < 0 ? 0 : ka[i] < kb[i] ? -1 : 1;
          const ia = layout.compose(a);
          const ib = layout.compose(b);
          expect(ia === ib ? 0 : ia < ib ? -1 : 1).toBe(expected);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('refuses fields out of range and ids above 63 bits', () => {
    const l = SnowflakeLayout.create({}, NOW);
    expect(() => l.compose({ timestamp: 0, worker: 1024, timeBack: 0, sequence: 0 })).toThrow(RangeError);
    expect(() => l.compose({ timestamp: 0, worker: 0, timeBack: 0, sequence: l.maxSequence + 1 })).toThrow(/sequence/);
    expect(() => l.decompose(2n ** 63n)).toThrow(RangeError);
    expect(() => l.decompose(-1n)).toThrow(RangeError);
  });
});

describe('horizons', () => {
  it('time left until the layout runs out, and until ids pass 2^53', () => {
    fc.assert(
      fc.property(layoutArb, (layout) => {
        const end = layout.settings.epochMs + (layout.maxTimestamp + 1) * layout.unitMs;
        expect(layout.timeLeftMs(NOW)).toBe(end - NOW);
        // The last id before the 2^53 horizon fits a number; the first after it does not.
        const limit = layout.numberTimestampLimit;
        if (limit <= layout.maxTimestamp) {
          const last = layout.compose({
            timestamp: limit - 1,
            worker: layout.maxWorker,
            timeBack: 1,
            sequence: layout.maxSequence,
          });
          const first = layout.compose({ timestamp: limit, worker: 0, timeBack: 0, sequence: 0 });
          expect(last < 2n ** 53n).toBe(true);
          expect(first >= 2n ** 53n).toBe(true);
          expect(layout.numberSafeLeftMs(NOW)).toBe(Math.max(0, layout.unitStartMs(limit) - NOW));
        }
      }),
      { numRuns: 500 },
    );
    // 41 ms bits with 10 worker bits pass 2^53 about 24.9 days after the epoch; 51 bits last ~69.7 years.
    expect(SnowflakeLayout.create({}, NOW).numberSafeLeftMs(NOW)).toBe(0);
    const wide = SnowflakeLayout.create({ timestampBits: 51, workerBits: 3 }, NOW);
    expect(wide.numberSafeLeftMs(NOW) / (365.25 * 86_400_000)).toBeGreaterThan(60);
  });
});

describe('string encodings', () => {
  const encodings: IdEncoding[] = ['decimal', 'base62', 'base36', 'hex'];
  it('round-trip any 64-bit value', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.constantFrom(...encodings), (id, enc) => {
        expect(decodeId(encodeId(id, enc), enc)).toBe(id);
      }),
      { numRuns: 3000 },
    );
  });

  it('match the usual radix forms and are short', () => {
    const id = 2n ** 63n - 1n;
    expect(encodeId(id, 'hex')).toBe('7fffffffffffffff');
    expect(encodeId(id, 'base36')).toBe('1y2p0ij32e8e7');
    expect(encodeId(61n, 'base62')).toBe('z');
    expect(encodeId(62n, 'base62')).toBe('10');
    expect(encodeId(id, 'base62').length).toBe(11);
  });

  it('refuse what they did not make', () => {
    expect(() => decodeId('12a', 'decimal')).toThrow(RangeError);
    expect(() => decodeId('g', 'hex')).toThrow(RangeError);
    expect(() => decodeId('a-b', 'base62')).toThrow(RangeError);
    expect(() => decodeId('zzzzzzzzzzzzz', 'base36')).toThrow(/above 2\^64/);
    expect(() => encodeId(-1n, 'hex')).toThrow(RangeError);
  });
});
