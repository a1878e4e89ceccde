/**
 * The snowflake bit layout (docs/design.md "Snowflake layout"), most significant first:
 * `0 | timestamp | region | worker | timeBack(1) | sequence | reserved`.
 *
 * - `timestamp`: time units since the epoch, its width bounded per unit ({@link TIMESTAMP_BITS}).
 * - `region`: 0–8 bits, `IDPOOL_REGION`: keeps apart the ids of deployments on their own
 *   databases, which lease the same worker ids (docs/scaling.md "Regions").
 * - `worker`: 3–10 bits; `timeBack`: flips when the clock moves back; `sequence`: the rest of 63 bits.
 * - `reserved`: 0–5 bits of a fixed value (to tell layouts or generators apart after a change).
 *
 * The settings are checked here only ({@link settingsProblem}); a built layout is valid by construction.
 */
import { ConfigError } from '../errors';
import { MAX_INT63 } from '../limits';

export type TimeUnit = 'ms' | 's' | 'min' | 'h' | 'd';

/** A layout's settings; each maps onto one `IDPOOL_SNOWFLAKE_*` variable (see {@link SETTING_VARIABLES}). */
export interface SnowflakeSettings {
  timeUnit: TimeUnit;
  /** Epoch in Unix milliseconds. */
  epochMs: number;
  timestampBits: number;
  workerBits: number;
  reservedBits: number;
  reservedValue: number;
  timeBackInitial: 0 | 1;
  /** Bits of the region field (0: none). */
  regionBits: number;
  /** This deployment's region, written in every id. */
  region: number;
}

/** Milliseconds per time unit. */
export const UNIT_MS: Readonly<Record<TimeUnit, number>> = {
  ms: 1,
  s: 1_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Allowed timestamp widths per unit (the table of docs/design.md "Snowflake layout"). */
export const TIMESTAMP_BITS: Readonly<Record<TimeUnit, readonly [min: number, max: number]>> = {
  ms: [41, 55],
  s: [31, 55],
  min: [25, 50],
  h: [19, 45],
  d: [15, 40],
};
/** Sign bit + time-back bit. */
const FIXED_BITS = 2;
const TOTAL_BITS = 64;
/** ECMAScript's largest Date (year 275760). */
const MAX_DATE_MS = 8.64e15;

/** The environment variable behind each setting, for error messages. */
const SETTING_VARIABLES: Readonly<Record<keyof SnowflakeSettings, string>> = {
  timeUnit: 'IDPOOL_SNOWFLAKE_TIME_UNIT',
  epochMs: 'IDPOOL_SNOWFLAKE_EPOCH',
  timestampBits: 'IDPOOL_SNOWFLAKE_TIMESTAMP_BITS',
  workerBits: 'IDPOOL_SNOWFLAKE_WORKER_BITS',
  reservedBits: 'IDPOOL_SNOWFLAKE_RESERVED_BITS',
  reservedValue: 'IDPOOL_SNOWFLAKE_RESERVED_VALUE',
  timeBackInitial: 'IDPOOL_SNOWFLAKE_TIMEBACK_INITIAL',
  regionBits: 'IDPOOL_SNOWFLAKE_REGION_BITS',
  region: 'IDPOOL_REGION',
};

/** docs/design.md defaults: 41-bit ms since 2024-01-01, 10 worker bits, no reserved bits. */
export const DEFAULT_SETTINGS: Readonly<SnowflakeSettings> = {
  timeUnit: 'ms',
  epochMs: Date.UTC(2024, 0, 1),
  timestampBits: 41,
  workerBits: 10,
  reservedBits: 0,
  reservedValue: 0,
  timeBackInitial: 0,
  regionBits: 0,
  region: 0,
};

/** The fields of one id. `timestamp` is in layout units since the epoch. */
export interface SnowflakeParts {
  timestamp: number;
  /** 0 in a layout without region bits. */
  region: number;
  worker: number;
  timeBack: 0 | 1;
  sequence: number;
  reserved: number;
}

/** A setting out of bounds, its variable, and `message`: the sentence after the variable's name, ending with `got` and `given` (the value as the caller spelt it). */
function problem(setting: keyof SnowflakeSettings, message: (given: string) => string) {
  return { setting, variable: SETTING_VARIABLES[setting], message };
}

/** Each integer setting's bounds (and why, when they hang on another setting), checked in this order. */
const INTEGER_BOUNDS: readonly [keyof SnowflakeSettings, (s: SnowflakeSettings) => [number, number, string?]][] = [
  ['timestampBits', (s) => [...TIMESTAMP_BITS[s.timeUnit], ` for time unit ${s.timeUnit}`]],
  ['workerBits', () => [3, 10]],
  ['reservedBits', () => [0, 5]],
  ['reservedValue', (s) => [0, 2 ** s.reservedBits - 1, ` (it must fit ${s.reservedBits} reserved bits)`]],
  ['timeBackInitial', () => [0, 1]],
  // 256 regions: far more than any deployment spans, and each bit is one taken from the sequence.
  ['regionBits', () => [0, 8]],
  ['region', (s) => [0, 2 ** s.regionBits - 1, ` (it must fit ${s.regionBits} region bits)`]],
];

/** What remains of 63 bits for the sequence (below 1: the settings do not fit). */
function sequenceBitsOf(s: SnowflakeSettings): number {
  return TOTAL_BITS - FIXED_BITS - s.timestampBits - s.regionBits - s.workerBits - s.reservedBits;
}

/** The first setting of `s` out of bounds, or undefined (the epoch against now is {@link SnowflakeLayout.create}'s). */
export function settingsProblem(s: SnowflakeSettings) {
  if (!Object.hasOwn(UNIT_MS, s.timeUnit))
    return problem('timeUnit', (given) => `must be one of ${Object.keys(UNIT_MS).join(', ')}, got ${given}`);
  for (const [setting, bounds] of INTEGER_BOUNDS) {
    const value = s[setting] as number;
    const [min, max, why = ''] = bounds(s);
    if (!Number.isInteger(value) || value < min || value > max)
      return problem(setting, (given) => `must be an integer from ${min} to ${max}${why}, got ${given}`);
  }
  const sequenceBits = sequenceBitsOf(s);
  if (sequenceBits < 1) {
    const most = s.timestampBits + sequenceBits - 1;
    return problem(
      'timestampBits',
      (given) =>
        `leaves ${sequenceBits} sequence bits; timestamp + region + worker + reserved bits must be at most 61 (63 minus the time-back bit minus at least 1 sequence bit), so with ${s.regionBits} region, ${s.workerBits} worker and ${s.reservedBits} reserved bits it must be at most ${most}, got ${given}`,
    );
  }
  if (!Number.isSafeInteger(s.epochMs) || s.epochMs < 0)
    return problem('epochMs', (given) => `must be a date at or after 1970-01-01, got ${given}`);
  return undefined;
}

export class SnowflakeLayout {
  readonly settings: Readonly<SnowflakeSettings>;
  readonly unitMs: number;
  readonly sequenceBits: number;
  /** Largest value of each field (the timestamp capped at 2^53 - 1). */
  readonly maxTimestamp: number;
  readonly maxWorker: number;
  readonly maxSequence: number;
  /** Bit offsets (from the least significant bit). */
  readonly timestampShift: number;
  readonly regionShift: number;
  readonly workerShift: number;
  readonly timeBackShift: number;
  readonly sequenceShift: number;
  /** Timestamps below this make ids below 2^53 (safe as JS numbers). */
  readonly numberTimestampLimit: number;
  // Each field's name, bit offset and width, most significant first: what compose and decompose walk.
  private readonly fields: readonly (readonly [keyof SnowflakeParts, number, number])[];

  private constructor(settings: SnowflakeSettings) {
    this.settings = Object.freeze({ ...settings });
    const { timeUnit, timestampBits, regionBits, workerBits, reservedBits } = settings;
    this.unitMs = UNIT_MS[timeUnit];
    this.sequenceBits = sequenceBitsOf(settings);
    this.sequenceShift = reservedBits;
    this.timeBackShift = reservedBits + this.sequenceBits;
    this.workerShift = this.timeBackShift + 1;
    this.regionShift = this.workerShift + workerBits;
    this.timestampShift = this.regionShift + regionBits;
    // Above 53 bits the field's top is millions of years away: capped so comparisons stay exact.
    this.maxTimestamp = Math.min(2 ** timestampBits - 1, Number.MAX_SAFE_INTEGER);
    this.maxWorker = 2 ** workerBits - 1;
    this.maxSequence = 2 ** this.sequenceBits - 1;
    this.numberTimestampLimit = 2 ** (53 - this.timestampShift);
    this.fields = [
      ['timestamp', this.timestampShift, timestampBits],
      ['region', this.regionShift, regionBits],
      ['worker', this.workerShift, workerBits],
      ['timeBack', this.timeBackShift, 1],
      ['sequence', this.sequenceShift, this.sequenceBits],
      ['reserved', 0, reservedBits],
    ];
  }

  /** Validates `settings` (the rest defaults) against the bounds and `nowMs` (no future epoch, not run out). */
  static create(settings: Partial<SnowflakeSettings> = {}, nowMs: number): SnowflakeLayout {
    const s: SnowflakeSettings = { ...DEFAULT_SETTINGS, ...settings };
    const wrong = settingsProblem(s);
    if (wrong) {
      const value = s[wrong.setting];
      throw new ConfigError(wrong.variable, wrong.message(typeof value === 'string' ? `"${value}"` : String(value)));
    }
    if (s.epochMs > nowMs) {
      throw new ConfigError(
        SETTING_VARIABLES.epochMs,
        `is in the future (${new Date(s.epochMs).toISOString()}; now is ${new Date(nowMs).toISOString()})`,
      );
    }
    const layout = new SnowflakeLayout(s);
    if (layout.timestampAt(nowMs) > layout.maxTimestamp) {
      throw new ConfigError(
        SETTING_VARIABLES.timestampBits,
        `${s.timestampBits} bits of ${s.timeUnit} since ${new Date(s.epochMs).toISOString()} ran out on ${new Date(layout.endMs).toISOString()}; use more timestamp bits or a later epoch`,
      );
    }
    return layout;
  }

  /** Timestamp field value (layout units since the epoch) at Unix time `ms`. */
  timestampAt(ms: number): number {
    return Math.floor((ms - this.settings.epochMs) / this.unitMs);
  }

  /** Unix ms at which timestamp `t` begins. */
  unitStartMs(t: number): number {
    return this.settings.epochMs + t * this.unitMs;
  }

  /** Unix ms after which no timestamp fits: the layout has run out. */
  get endMs(): number {
    return this.unitStartMs(this.maxTimestamp + 1);
  }

  /** Unix ms from which ids can be 2^53 or above (unsafe as JS numbers). */
  get numberUnsafeFromMs(): number {
    return this.unitStartMs(this.numberTimestampLimit);
  }

  /** Milliseconds left until this layout runs out of timestamps (0 if it has). */
  timeLeftMs(nowMs: number): number {
    return Math.max(0, this.endMs - nowMs);
  }

  /** Milliseconds left until new ids pass 2^53 - 1 and stop being safe JS numbers (0 if they have). */
  numberSafeLeftMs(nowMs: number): number {
    return Math.max(0, this.numberUnsafeFromMs - nowMs);
  }

  /** The id made of these fields; throws RangeError for a field out of range. */
  compose(parts: Omit<SnowflakeParts, 'reserved' | 'region'> & { reserved?: number; region?: number }): bigint {
    const values = {
      ...parts,
      reserved: parts.reserved ?? this.settings.reservedValue,
      region: parts.region ?? this.settings.region,
    };
    let id = 0n;
    for (const [name, shift, bits] of this.fields) {
      const v = values[name];
      const max = Math.min(2 ** bits - 1, Number.MAX_SAFE_INTEGER);
      if (!Number.isSafeInteger(v) || v < 0 || v > max)
        throw new RangeError(`${name} must be an integer from 0 to ${max}, got ${v}`);
      id |= BigInt(v) << BigInt(shift);
    }
    return id;
  }

  /** The fields of `id`; throws RangeError when it is negative or above 63 bits. */
  decompose(id: bigint | number | string): SnowflakeParts {
    const v = BigInt(id);
    if (v < 0n || v > MAX_INT63) throw new RangeError(`a snowflake id is a 63-bit non-negative integer, got ${v}`);
    const parts = {} as Record<keyof SnowflakeParts, number>;
    for (const [name, shift, bits] of this.fields)
      parts[name] = Number((v >> BigInt(shift)) & ((1n << BigInt(bits)) - 1n));
    return parts as SnowflakeParts;
  }

  /** When `id` was made (the start of its time unit). */
  toTime(id: bigint | number | string): Date {
    const ms = this.unitStartMs(this.decompose(id).timestamp);
    if (ms > MAX_DATE_MS)
      throw new RangeError(
        `id ${id} decodes to ${ms} ms since 1970, beyond what a Date can hold (the far end of a wide layout)`,
      );
    return new Date(ms);
  }

  /** A one-line description for logs: `ms 41 | worker 10 | timeBack 1 | sequence 11 | reserved 0`. */
  describe(): string {
    const s = this.settings;
    const region = s.regionBits ? ` | region ${s.regionBits}=${s.region}` : '';
    return `${s.timeUnit} ${s.timestampBits}${region} | worker ${s.workerBits} | timeBack 1 | sequence ${this.sequenceBits} | reserved ${s.reservedBits}=${s.reservedValue} | epoch ${new Date(s.epochMs).toISOString()}`;
  }
}
