// One class on purpose: the hot path (`step`, `steps`, `setBase`) stays monomorphic over one
// state shape with the layout's constants in fields, so V8 inlines it. The layout is `layout.ts`'s.
import { type Clock, systemClock } from '../clock';
import { ConfigError } from '../errors';
import { encodeId, type IdEncoding } from './encoding';
import { ClockBehindError, LayoutExhaustedError, NoWorkerLeaseError, SequenceExhaustedError } from './errors';
import { SnowflakeLayout, type SnowflakeParts, type SnowflakeSettings } from './layout';
import { type WorkerGrant, type WorkerSource, fixedWorker } from './worker-source';

export interface SnowflakeOptions {
  /** A validated layout, or settings for one (missing ones are docs/design.md defaults). */
  layout?: SnowflakeLayout | Partial<SnowflakeSettings>;
  /** A fixed worker id (no lease). Give this or `worker`. */
  workerId?: number;
  /** Where the worker id comes from when it is leased (`WorkerLease`). */
  worker?: WorkerSource;
  clock?: Clock;
  /** Longest wait (ms) of the async methods (second rollback, spent sequence) before a 503-style error. Default 1000. */
  maxWaitMs?: number;
  /** Longest busy-wait, in ms, of the sync methods before they fail instead. Default 10. */
  maxSpinMs?: number;
  /** Run once by {@link Snowflake.close}: frees what the generator was given (a lease, its database). */
  onClose?: () => Promise<void>;
}

// 10 ms of busy-waiting covers an exhausted ms sequence and small NTP slews
// without freezing the event loop noticeably; longer waits belong to the async API.
const DEFAULTS = { maxWaitMs: 1000, maxSpinMs: 10 } as const;
/** Longest wait of the async methods by default (`IDPOOL_SNOWFLAKE_MAX_WAIT_MS`). */
export const DEFAULT_MAX_WAIT_MS = DEFAULTS.maxWaitMs;
/** 10^8: ids are written as their digits above this, once per run, and the eight below it per id. */
const LOW_DIGITS = 100_000_000;
const LOW_DIGITS_BIG = BigInt(LOW_DIGITS);
const DEFAULT_SEQUENCE = '';

// One sequence: the last timestamp and sequence number of the time-back bit in use and of the other.
interface SequenceState {
  grant: WorkerGrant | undefined;
  bit: number;
  t: number;
  seq: number;
  otherT: number;
  otherSeq: number;
  /** The id of (t, worker, bit, sequence 0, reserved), both ways. */
  baseNum: number;
  baseBig: bigint;
  numberSafe: boolean;
  /** Time unit of the grant's floor: this one and earlier are never used. */
  floorT: number;
  /** Settles when the last async take waiting on this sequence is done (unset: none waits); see `fill`. */
  line: Promise<void> | undefined;
}

type WaitReason = 'sequence' | 'clock' | 'floor' | 'ceiling';

/**
 * Snowflake id generator: one sequence per entity key, one worker id for all. A clock rollback
 * flips the sequence's time-back bit (each bit keeps its own last timestamp); a second one into
 * used time waits up to `maxWaitMs` or fails with {@link ClockBehindError}.
 */
export class Snowflake {
  readonly layout: SnowflakeLayout;
  private readonly source: WorkerSource;
  private readonly clock: Clock;
  private readonly maxWaitMs: number;
  private readonly maxSpinMs: number;
  private readonly sequences = new Map<string, SequenceState>();
  private readonly defaultState: SequenceState;
  // Layout constants copied to fields: the hot path reads them on every id.
  private readonly epochMs: number;
  private readonly unitMs: number;
  private readonly maxSequence: number;
  private readonly seqMul: number;
  private readonly initialBit: number;
  // Set by `step` when it returns -1.
  private waitMs = 0;
  // Set by `steps`: how many sequence numbers its run holds.
  private runLength = 0;
  private waitReason: WaitReason = 'sequence';
  private maxUnitUsed = -Infinity;
  private onClose: (() => Promise<void>) | undefined;

  constructor(options: SnowflakeOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.layout =
      options.layout instanceof SnowflakeLayout
        ? options.layout
        : SnowflakeLayout.create(options.layout, this.clock.now());
    if (options.worker && options.workerId !== undefined)
      throw new TypeError('give either workerId or worker, not both');
    if (options.worker) this.source = options.worker;
    else {
      const id = options.workerId;
      if (id === undefined)
        throw new TypeError(
          'a Snowflake needs a worker id: { workerId } or a lease ({ worker }); see Snowflake.fromEnv and Snowflake.withLease',
        );
      if (!Number.isInteger(id) || id < 0 || id > this.layout.maxWorker) {
        throw new ConfigError(
          'IDPOOL_WORKER_ID',
          `must be an integer from 0 to ${this.layout.maxWorker} (${this.layout.settings.workerBits} worker bits), got ${id}`,
        );
      }
      this.source = fixedWorker(id);
    }
    this.maxWaitMs = options.maxWaitMs ?? DEFAULTS.maxWaitMs;
    this.maxSpinMs = options.maxSpinMs ?? DEFAULTS.maxSpinMs;
    this.onClose = options.onClose;
    this.epochMs = this.layout.settings.epochMs;
    this.unitMs = this.layout.unitMs;
    this.maxSequence = this.layout.maxSequence;
    this.seqMul = 2 ** this.layout.sequenceShift;
    this.initialBit = this.layout.settings.timeBackInitial;
    this.defaultState = this.newState();
    this.sequences.set(DEFAULT_SEQUENCE, this.defaultState);
  }

  /** Runs `onClose` once (a lease and its database); a no-op for a fixed worker id. */
  async close(): Promise<void> {
    const onClose = this.onClose;
    this.onClose = undefined;
    await onClose?.();
  }

  /** The next id of `entityKey`'s sequence (default: the unnamed one). Busy-waits up to `maxSpinMs`. */
  nextId(entityKey?: string): bigint {
    const s = this.advance(entityKey);
    return s.baseBig + BigInt(s.seq * this.seqMul);
  }

  /** The next id as a JS number; RangeError once ids pass 2^53 ({@link SnowflakeLayout.numberSafeLeftMs}). */
  nextNumber(entityKey?: string): number {
    const s = this.advance(entityKey);
    if (!s.numberSafe) {
      throw new RangeError(
        `snowflake ids passed 2^53 on ${new Date(this.layout.numberUnsafeFromMs).toISOString()}; use nextId() (bigint) or a layout with more timestamp bits`,
      );
    }
    return s.baseNum + s.seq * this.seqMul;
  }

  /** The next id as a string: decimal (default), base62, base36 or hex. */
  nextString(encoding: IdEncoding = 'decimal', entityKey?: string): string {
    return encodeId(this.nextId(entityKey), encoding);
  }

  /** `count` ids of `entityKey`, in order; sleeps (never busy-waits) up to `maxWaitMs` per wait. */
  take(entityKey: string, count: number): Promise<bigint[]> {
    return this.fill(entityKey, count, (s, first, n, ids, at) => {
      for (let k = 0; k < n; k++) ids[at + k] = s.baseBig + BigInt((first + k) * this.seqMul);
    });
  }

  /** Like {@link take}, as decimal strings (the wire format). */
  takeStrings(entityKey: string, count: number): Promise<string[]> {
    return this.fill(entityKey, count, (s, first, n, ids, at) => {
      const mul = this.seqMul;
      // A large number's decimal string costs 200-500 ns; a run shares every digit above the last
      // eight, so those are converted once per run and each id adds a small integer's.
      let prefix = '';
      let low: number;
      if (s.numberSafe) {
        const high = Math.floor(s.baseNum / LOW_DIGITS);
        low = s.baseNum - high * LOW_DIGITS;
        if (high > 0) prefix = String(high);
      } else {
        const high = s.baseBig / LOW_DIGITS_BIG;
        low = Number(s.baseBig - high * LOW_DIGITS_BIG);
        prefix = high.toString();
      }
      if (prefix === '' || low + (first + n - 1) * mul >= LOW_DIGITS) {
        // A run that carries into the ninth digit (or ids of eight digits or fewer): each id whole.
        for (let k = 0; k < n; k++)
          ids[at + k] = s.numberSafe
            ? String(s.baseNum + (first + k) * mul)
            : (s.baseBig + BigInt((first + k) * mul)).toString();
        return;
      }
      for (let k = 0; k < n; k++) ids[at + k] = prefix + String(LOW_DIGITS + low + (first + k) * mul).slice(1);
    });
  }

  // `count` ids written one run (one time unit, one clock read) at a time. A take that must wait
  // queues on the sequence, so concurrent takes do not all wake to find it spent again.
  private async fill<T>(
    entityKey: string,
    count: number,
    write: (s: SequenceState, first: number, n: number, ids: T[], at: number) => void,
  ): Promise<T[]> {
    const s = this.state(entityKey);
    const ids = new Array<T>(count);
    let i = 0;
    // Writes runs until the ids are all there (true) or the sequence must wait (false).
    const run = (): boolean => {
      while (i < count) {
        const first = this.steps(s, count - i);
        if (first < 0) return false;
        write(s, first, this.runLength, ids, i);
        i += this.runLength;
      }
      return true;
    };
    if (s.line === undefined && run()) return ids;
    const before = s.line;
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    s.line = mine;
    try {
      if (before) await before;
      while (!run()) await this.wait(entityKey);
      return ids;
    } finally {
      if (s.line === mine) s.line = undefined;
      done();
    }
  }

  compose(parts: Parameters<SnowflakeLayout['compose']>[0]): bigint {
    return this.layout.compose(parts);
  }

  decompose(id: bigint | number | string): SnowflakeParts {
    return this.layout.decompose(id);
  }

  toTime(id: bigint | number | string): Date {
    return this.layout.toTime(id);
  }

  /** Milliseconds until the layout runs out of timestamps. */
  timeLeftMs(): number {
    return this.layout.timeLeftMs(this.clock.now());
  }

  /** Milliseconds until new ids pass 2^53 (0 once they have). */
  numberSafeLeftMs(): number {
    return this.layout.numberSafeLeftMs(this.clock.now());
  }

  /** The worker id in use now (throws when a lease has lapsed). */
  get workerId(): number {
    return this.source.current().workerId;
  }

  /** Unix ms at which the latest time unit used by any sequence began (undefined before the first id). */
  lastUsedMs(): number | undefined {
    return this.maxUnitUsed === -Infinity ? undefined : this.layout.unitStartMs(this.maxUnitUsed);
  }

  private newState(): SequenceState {
    return {
      grant: undefined,
      bit: this.initialBit,
      t: -Infinity,
      seq: 0,
      otherT: -Infinity,
      otherSeq: 0,
      baseNum: 0,
      baseBig: 0n,
      numberSafe: false,
      floorT: -Infinity,
      line: undefined,
    };
  }

  private state(entityKey: string): SequenceState {
    let s = this.sequences.get(entityKey);
    if (!s) this.sequences.set(entityKey, (s = this.newState()));
    return s;
  }

  // A new grant: both time-back values start at its floor, spent, so the first id comes after it.
  private resetState(s: SequenceState, grant: WorkerGrant): void {
    const floor = grant.floorMs === -Infinity ? -Infinity : this.layout.timestampAt(grant.floorMs);
    s.grant = grant;
    s.floorT = floor;
    s.bit = this.initialBit;
    s.t = s.otherT = floor;
    s.seq = s.otherSeq = this.maxSequence;
  }

  // The id of sequence 0 in `s`'s time unit, composed once per unit; `baseNum` is exact only while `numberSafe`.
  private setBase(s: SequenceState): void {
    if (!s.grant) throw new Error('snowflake: a time unit entered without a worker grant');
    s.baseBig = this.layout.compose({
      timestamp: s.t,
      worker: s.grant.workerId,
      timeBack: s.bit as 0 | 1,
      sequence: 0,
    });
    s.baseNum = Number(s.baseBig);
    s.numberSafe = s.t < this.layout.numberTimestampLimit;
    if (s.t > this.maxUnitUsed) this.maxUnitUsed = s.t;
  }

  // Advances `s` by one id: its sequence number (now `s.seq`), or -1 with `waitMs` set.
  private step(s: SequenceState): number {
    const grant = this.source.current();
    if (grant !== s.grant) this.resetState(s, grant);
    const now = this.clock.now();
    const t = Math.floor((now - this.epochMs) / this.unitMs);
    if (t === s.t) {
      if (s.seq < this.maxSequence) return ++s.seq;
      return this.mustWait(now, t + 1, t <= s.floorT ? 'floor' : 'sequence');
    }
    if (t > s.t) return this.enter(s, t);
    // The clock moved back: the other time-back value is safe if it has not used up this unit.
    if (t > s.otherT || (t === s.otherT && s.otherSeq < this.maxSequence)) {
      s.bit ^= 1;
      [s.t, s.seq, s.otherT, s.otherSeq] = [s.otherT, s.otherSeq, s.t, s.seq];
      if (t > s.t) return this.enter(s, t);
      this.setBase(s);
      return ++s.seq;
    }
    // A second rollback into time both values used: wait for the first unit either can continue in.
    const mine = s.seq < this.maxSequence ? s.t : s.t + 1;
    const other = s.otherSeq < this.maxSequence ? s.otherT : s.otherT + 1;
    return this.mustWait(now, Math.min(mine, other), t <= s.floorT ? 'floor' : 'clock');
  }

  // Like `step`, but takes up to `want` numbers of its unit: the first (or -1); `runLength` says how many.
  private steps(s: SequenceState, want: number): number {
    const first = this.step(s);
    if (first < 0) return first;
    const n = Math.min(want, this.maxSequence - first + 1);
    s.seq = first + n - 1;
    this.runLength = n;
    return first;
  }

  private enter(s: SequenceState, t: number): number {
    if (t > this.layout.maxTimestamp) throw new LayoutExhaustedError(this.layout.endMs);
    const start = this.epochMs + t * this.unitMs;
    // Past the lease's recorded ceiling: only the next renewal raises it, so fail rather than wait.
    if (start > this.source.ceilingMs) {
      this.waitMs = Infinity;
      this.waitReason = 'ceiling';
      return -1;
    }
    s.t = t;
    s.seq = 0;
    this.setBase(s);
    return 0;
  }

  private mustWait(now: number, unit: number, reason: WaitReason): number {
    // Positive: `unit` is always after the current one.
    this.waitMs = this.epochMs + unit * this.unitMs - now;
    this.waitReason = reason;
    return -1;
  }

  private tooLong(entityKey: string | undefined): Error {
    const reason = this.waitReason;
    if (reason === 'sequence') return new SequenceExhaustedError(this.waitMs, entityKey ?? '');
    if (reason === 'ceiling')
      return new NoWorkerLeaseError('the clock passed the time the lease has recorded; the next heartbeat extends it');
    return new ClockBehindError(
      this.waitMs,
      reason === 'floor'
        ? 'the clock is at or behind the last timestamp recorded for this worker id (a restart after a clock rollback?)'
        : 'the clock moved back a second time into time already used with both time-back values',
    );
  }

  // Steps `s` once, busy-waiting (sync methods) when it must; the first wait decides whether that is allowed.
  private advance(entityKey: string | undefined): SequenceState {
    const s = entityKey === undefined ? this.defaultState : this.state(entityKey);
    if (this.step(s) < 0) this.spin(s, entityKey);
    return s;
  }

  private spin(s: SequenceState, entityKey: string | undefined): void {
    if (this.waitMs > this.maxSpinMs) throw this.tooLong(entityKey);
    // The deadline is on the injected monotonic clock, so a stuck clock cannot hang us forever.
    const deadline = this.clock.monotonic() + this.maxSpinMs + 1;
    for (;;) {
      if (this.step(s) >= 0) return;
      if (this.waitMs > this.maxSpinMs) throw this.tooLong(entityKey);
      if (this.clock.monotonic() > deadline) {
        // Perhaps only descheduled between two reads: one last look before giving up.
        if (this.step(s) >= 0) return;
        throw this.tooLong(entityKey);
      }
    }
  }

  // Sleeps (async methods) until the wait set by `step` is over, or fails when it is too long.
  private async wait(entityKey: string): Promise<void> {
    if (this.waitMs > this.maxWaitMs) throw this.tooLong(entityKey);
    await this.clock.sleep(this.waitMs);
  }
}
