/**
 * Business numbers without Redis (docs/numbers.md): the embedded service's
 * and the library's. The process clock decides the period; numbers are
 * reserved from the period counters (number-counter.ts) and formatted here.
 * Beside it the parts the Redis take (pool/number-takes.ts) shares: the
 * scheme cache, a range formatted, the 503 of a full period.
 */
import type { Clock } from '../clock';
import { ConflictError, PeriodExhaustedError, PeriodShortError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import type { Period } from '../numbers/period';
import { NumberScheme, type NumberSettings } from '../numbers/scheme';
import { NUMBER_PERIOD_RETENTION_MS, type SeqRange } from './number-counter';
import type { PrunableCounter } from './number-high-water';
import { shuffle } from './shuffle';

/**
 * Five seconds: in process a reservation is one statement on a local or
 * near database, so the lead only takes it off the first take after the
 * boundary; a process that stops within the lead loses that step (a gap in
 * the next period), so it is kept short (Redis's fleet fills a minute ahead:
 * its numbers outlive any one instance).
 */
export const LOCAL_PREFILL_LEAD_MS = 5_000;

/** Old periods' counters are pruned this often. */
export const PRUNE_EVERY_MS = 3600_000;

/** What a business-number take needs of an entity (an `EntityConfig`; the library builds one from its `application` row). */
export interface NumberEntity {
  readonly key: string;
  readonly mode: 'monotonic' | 'trend' | 'snowflake';
  readonly step: number;
  /** The largest take (`maxSizePerTimes`); the library's takes have none. */
  readonly maxSizePerTimes?: number;
  readonly numbers?: NumberSettings;
  readonly maxSizePerSecond: number;
}

/** The scheme of an entity's settings, built once per settings (they never change once registered). */
export class NumberSchemes {
  private readonly cache = new Map<string, NumberScheme>();

  of(entity: Pick<NumberEntity, 'key' | 'numbers'>): NumberScheme {
    const settings = entity.numbers;
    if (!settings) throw new Error(`entity ${entity.key} has no business-number format`);
    const id = `${settings.format}\n${settings.reset}\n${settings.timeZone}`;
    let scheme = this.cache.get(id);
    if (!scheme) {
      scheme = NumberScheme.of(settings);
      this.cache.set(id, scheme);
    }
    return scheme;
  }
}

/** The period named `periodId` of the entity's calendar, or a 400-worthy complaint. */
export function namedPeriod(
  scheme: NumberScheme,
  entity: Pick<NumberEntity, 'key'>,
  periodId: string,
  now: number,
): Period {
  const period = scheme.calendar.named(periodId);
  if (!period)
    throw new RangeError(
      `"${periodId}" is no ${scheme.template.reset} period of ${entity.key} (${scheme.settings.timeZone}); periods are named like ${scheme.calendar.at(now).id}`,
    );
  return period;
}

/**
 * The next sequence of a period a take can hand out: one above the highest
 * of `1..reserved` that is not still waiting (it was handed out, or dropped
 * as a gap). The line a raise must pass (docs/numbers.md).
 */
export function periodLine(scheme: NumberScheme, reserved: bigint, waiting: readonly string[]): bigint {
  const seqs = new Set(waiting.map((n) => scheme.template.decode(n)?.seq));
  let seq = reserved;
  while (seq > 0n && seqs.has(seq)) seq--;
  return seq + 1n;
}

/** A raise that would move nothing up: 409, as a plain entity's raise to a firstId its line has passed. */
export function raiseBelowLine(
  entity: Pick<NumberEntity, 'key'>,
  scheme: NumberScheme,
  period: Period,
  seq: bigint,
  line: bigint,
): ConflictError {
  return new ConflictError(
    `period ${period.id} of "${entity.key}" is already past seq ${seq}: the next number is ${scheme.template.formatter(period)(line)}; nothing changed`,
  );
}

/** Formatted numbers `range` of `period`; a trend entity's shuffled within each step. */
export function formatRange(
  scheme: NumberScheme,
  entity: Pick<NumberEntity, 'mode' | 'step'>,
  period: Period,
  range: SeqRange,
): string[] {
  const format = scheme.template.formatter(period);
  const count = Number(range.last - range.first + 1n);
  const out = new Array<string>(count);
  const safe = range.last <= BigInt(Number.MAX_SAFE_INTEGER);
  const first = Number(range.first);
  for (let i = 0; i < count; i++) out[i] = safe ? format(first + i) : format(range.first + BigInt(i));
  if (entity.mode === 'trend')
    for (let s = 0; s < count; s += entity.step) shuffle(out, s, Math.min(s + entity.step, count));
  return out;
}

function periodFull(
  entity: Pick<NumberEntity, 'key'>,
  scheme: NumberScheme,
  period: string,
  msLeft: number,
): PeriodExhaustedError {
  return new PeriodExhaustedError(
    `${entity.key}: period ${period} has handed out all ${scheme.capacity} numbers of ${scheme.template.seqWidth} digits; the next period starts in ${Math.ceil(msLeft / 1000)} s`,
    Math.max(1, Math.ceil(msLeft / 1000)),
  );
}

/** A period's pool as a take that ran short finds it. */
export interface LivePeriod {
  readonly period: string;
  readonly end: number;
  /** The period's counter is at its capacity: nothing more comes. */
  readonly full: boolean;
  readonly size: number;
}

/**
 * After a take of `count` ran short on the live period `live` at `now`:
 * true when they are ready now; the period's refusal when it is spent
 * (`period_short` with what remains, `period_exhausted` when none); false
 * when a refill is what it needs.
 */
export function readyOrSpent(
  entity: Pick<NumberEntity, 'key'>,
  scheme: NumberScheme,
  live: LivePeriod,
  now: number,
  count: number,
  periodExhausted: (entityKey: string, digits: number, nextAt: number) => void,
): boolean {
  if (live.size >= count) return true;
  if (live.full && live.size > 0) throw new PeriodShortError(entity.key, live.period, count, live.size);
  if (!live.full) return false;
  periodExhausted(entity.key, scheme.template.seqWidth, live.end);
  throw periodFull(entity, scheme, live.period, live.end - now);
}

/** After a raise to `upTo` (formatted): the sequence the next number follows, the lowest of `waiting` above it kept, else `after`. */
export function followedAfterRaise(
  scheme: NumberScheme,
  waiting: readonly string[],
  upTo: string,
  after: bigint,
): bigint {
  const next = waiting
    .filter((n) => n > upTo)
    .sort()
    .at(0);
  return next === undefined ? after : (scheme.template.decode(next)?.seq ?? after + 1n) - 1n;
}

/** Numbers of one period reserved and formatted in process, not handed out yet. */
interface LocalBuffer {
  readonly period: string;
  readonly numbers: string[];
  full: boolean;
}

export interface LocalNumbersOptions {
  /** The period counters, behind the second record of what was reserved (HighWaterNumberCounter). */
  counter: PrunableCounter;
  clock: Clock;
  /**
   * How long before a boundary the next period's first step is reserved
   * (default {@link LOCAL_PREFILL_LEAD_MS}).
   */
  prefillLeadMs?: number;
  log?: Logger;
}

/**
 * The library's business numbers (the embedded service's run on the one
 * engine, `pool/memory-number-periods.ts`; a library has no refiller, and
 * `library/` sits below `pool/`): the process clock decides the period;
 * each entity keeps the rest of its last reservation in process, the next
 * period's first step is reserved when a take comes in the seconds before
 * the boundary (the first take after it reserves nothing), and rows of
 * periods over for longer than the retention are pruned hourly.
 */
export class LocalNumbers {
  private readonly schemes = new NumberSchemes();
  private readonly buffers = new Map<string, LocalBuffer>();
  /** The next period's first step, reserved ahead of the boundary. */
  private readonly ahead = new Map<string, { period: string; ready: Promise<LocalBuffer | undefined> }>();
  private readonly running = new Map<string, Promise<unknown>>();
  /** When (Unix ms) old periods were last pruned. */
  private prunedAt = -Infinity;

  constructor(private readonly options: LocalNumbersOptions) {}

  /** `count` numbers of the period now is in, all or nothing. */
  take(entity: NumberEntity, count: number): Promise<string[]> {
    // One take per entity at a time: a take that reserves must not interleave with another's.
    const before = this.running.get(entity.key) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(() => this.takeNow(entity, count));
    this.running.set(entity.key, mine);
    void mine
      .finally(() => {
        if (this.running.get(entity.key) === mine) this.running.delete(entity.key);
      })
      .catch(() => undefined);
    return mine;
  }

  private async takeNow(entity: NumberEntity, count: number): Promise<string[]> {
    this.pruneHourly();
    const scheme = this.schemes.of(entity);
    const now = this.options.clock.now();
    const period = scheme.calendar.at(now);
    const buffer = await this.bufferOf(entity, period);
    while (buffer.numbers.length < count && !buffer.full) await this.reserveInto(buffer, entity, scheme, period, count);
    if (buffer.numbers.length < count) {
      const live = { period: period.id, end: period.end, full: true, size: buffer.numbers.length };
      readyOrSpent(entity, scheme, live, this.options.clock.now(), count, () => undefined);
    }
    const out = buffer.numbers.splice(0, count);
    const next = scheme.calendar.after(period);
    if (next && now >= next.start - (this.options.prefillLeadMs ?? LOCAL_PREFILL_LEAD_MS))
      this.prefill(entity, scheme, next);
    return out;
  }

  /** The entity's buffer of `period`: the one in use, the one reserved ahead, or a new empty one. */
  private async bufferOf(entity: NumberEntity, period: Period): Promise<LocalBuffer> {
    let buffer = this.buffers.get(entity.key);
    if (buffer?.period === period.id) return buffer;
    const ahead = this.ahead.get(entity.key);
    this.ahead.delete(entity.key);
    const early = ahead?.period === period.id ? await ahead.ready : undefined;
    buffer = early ?? { period: period.id, numbers: [], full: false };
    this.buffers.set(entity.key, buffer);
    return buffer;
  }

  private async reserveInto(
    buffer: LocalBuffer,
    entity: NumberEntity,
    scheme: NumberScheme,
    period: Period,
    count: number,
  ): Promise<void> {
    // A step at a time, within the scheme's cap of ready numbers (a restart skips what the buffer holds).
    const want = Math.max(
      Math.min(entity.step, scheme.poolCap(entity.maxSizePerTimes ?? 0)),
      count - buffer.numbers.length,
    );
    const range = await this.options.counter.reserve(entity.key, period, want, scheme.capacity);
    if (!range || range.last >= scheme.capacity) buffer.full = true;
    if (range) buffer.numbers.push(...formatRange(scheme, entity, period, range));
  }

  /** Reserves the first step of `next` once, in the background; a failure leaves the first take after the boundary to reserve. */
  private prefill(entity: NumberEntity, scheme: NumberScheme, next: Period): void {
    if (this.ahead.get(entity.key)?.period === next.id) return;
    const buffer: LocalBuffer = { period: next.id, numbers: [], full: false };
    const ready = this.reserveInto(buffer, entity, scheme, next, 0).then(
      () => buffer,
      (err: unknown) => {
        this.options.log?.warn(
          { entity: entity.key, err: errorMessage(err) },
          'reserving the next period ahead failed',
        );
        return undefined;
      },
    );
    this.ahead.set(entity.key, { period: next.id, ready });
  }

  /**
   * Prunes rows (and record marks) of periods over for longer than
   * NUMBER_PERIOD_RETENTION_MS now, and again at a take an hour or more
   * after: no timer, so an idle library holds nothing.
   */
  start(): void {
    this.pruneHourly();
  }

  private pruneHourly(): void {
    const now = this.options.clock.now();
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = now;
    this.options.counter
      .prune?.(now - NUMBER_PERIOD_RETENTION_MS)
      .catch((err: unknown) =>
        this.options.log?.warn({ err: errorMessage(err) }, 'pruning business-number counters failed'),
      );
  }
}
