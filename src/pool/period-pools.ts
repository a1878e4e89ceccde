/**
 * Business numbers on the one engine (docs/numbers.md): a number entity is a segment entity whose pool is kept
 * per period. {@link NumberPeriods} is the layer the refiller, dispatcher, admin routes and library ask, over
 * Redis's lists (`number-store.ts`) or the in-process pool (`memory-number-store.ts`).
 */
import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import { ConflictError, PeriodExhaustedError, PeriodShortError, UnavailableError, errorMessage } from '../errors';
import type { Period } from '../numbers/period';
import { NumberScheme, type NumberSettings } from '../numbers/scheme';
import type { Logger } from '../logger';
import type { DatabaseBehindReport } from '../segment/high-water';
import { NUMBER_PERIOD_RETENTION_MS, type NumberCounter, type SeqRange } from '../segment/number-counter';
import type { PoolSizing } from './demand';
import type { HeldLock, RefillLock } from './pool-store';
import type { NumberRun } from './redis-rpush-ids';
import { shuffle } from './segment-push';

/** Short: in process a step reserved ahead is lost (a gap) if the process stops within the lead; Redis's outlive it. */
export const LOCAL_PREFILL_LEAD_MS = 5_000;

/** The first take after a boundary is served from Redis however slow the database. */
const REDIS_PREFILL_LEAD_MS = 60_000;

/** What a business-number take needs of an entity (the library's `maxSizePerTimes` is 0: no largest take). */
export type NumberEntity = Pick<EntityConfig, 'key' | 'mode' | 'step' | 'maxSizePerTimes' | 'numbers'>;

/** What the refiller and the dispatcher ask of a business-number entity, whose pool is kept per period. */
export interface PeriodPools {
  /** Most numbers of one period kept ready: the cap on the pool's demand sizing (`NumberScheme.poolCap`). */
  cap(entity: EntityConfig): number;
  /** Fills now's period (and the next, ahead of its boundary) towards `sizing`, at least `need`; under the refill lock. */
  fill(entity: EntityConfig, need: number, sizing: PoolSizing): Promise<void>;
  /** After a short take: true when `count` are ready now; throws the period's refusal; false when a refill is what it needs. */
  afterShort(entity: EntityConfig, count: number): Promise<boolean>;
  /** Of `keys`, those due a refill whatever their level (a boundary, a lead, a fence check), and the ms to the next. */
  due(keys: readonly string[]): { keys: string[]; waitMs: number };
}

/** What the admin routes and the ops sampler ask of business numbers, with or without Redis. */
export interface NumberAdmin {
  /** Moves the counter of period `periodId` up to at least `seq`; resolves to it after. */
  raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint>;
  /** How much of now's period is used, by the clock that decides the period. */
  usage(entity: EntityConfig): Promise<NumberUsage>;
}

/** Now's period of a business-number entity and how much of it is gone. */
export interface NumberUsage {
  /** Unix ms, by the deciding clock. */
  readonly now: number;
  readonly period: Period;
  /** Sequences no take can have any more: the highest reserved less those still ready. */
  readonly used: bigint;
  readonly ready: number;
  /** 10^N − 1 and N of `{seq:N}`. */
  readonly capacity: bigint;
  readonly digits: number;
  readonly timeZone: string;
}

/** One period's pool (none: `period` undefined); `full`: its counter is at its capacity, nothing more comes. */
export interface PeriodSlot {
  readonly period: string | undefined;
  readonly start: number;
  readonly end: number;
  readonly full: boolean;
  readonly size: number;
}

/** An entity's pools at one instant of the clock that decides the period. */
export interface PeriodState {
  readonly now: number;
  /** False when the lists were filled in another Redis epoch (reset before use). */
  readonly epochCurrent: boolean;
  /** [live, staged]; the staged period was made live first if the clock is in it. */
  readonly slots: readonly [PeriodSlot, PeriodSlot];
  /** Start of the newest period that went live: no older period is served again. */
  readonly latest: number;
  /** A reset dropped lists filled in another epoch. */
  readonly dropped: boolean;
  /** Redis: each period's fence (highest pushed), read with the lists so a push between cannot inflate use. */
  readonly fences?: ReadonlyMap<string, bigint>;
}

/** Where an entity's periods' numbers wait: Redis's lists (`RedisNumberStore`) or in process (`MemoryNumberStore`). */
export interface PeriodStore {
  /** In process: only the next period's first step is staged. */
  readonly inProcess: boolean;
  /** `reset` (period id, highest maybe issued): lists of another epoch dropped first, those fences raised. */
  state(entityKey: string, reset?: readonly (readonly [string, bigint])[]): Promise<PeriodState>;
  /** Appends `range` (none: only `full` marked) in take order to `period`'s pool, live or staged. */
  pushRange(
    entity: NumberEntity,
    scheme: NumberScheme,
    period: Period,
    range: SeqRange | undefined,
    full: boolean,
  ): Promise<string>;
  waiting(entityKey: string, period: Period): Promise<string[]>;
  /** The highest sequence that may have been handed out (0 before any). */
  issued(entityKey: string, periodId: string): Promise<bigint>;
  /** Drops the waiting numbers up to `upTo` (sequence `seq`), those above kept in order. */
  trim(entityKey: string, period: Period, upTo: string, seq: bigint): Promise<unknown>;
  pruneFences?(entityKey: string, beforeId: string): Promise<void>;
  forget?(entityKey: string): void;
}

export interface NumberPeriodsOptions {
  store: PeriodStore;
  /** The period counters in SQL (embedded: behind the high-water file, `HighWaterNumberCounter`). */
  counter: NumberCounter;
  /** Taken by a raise, as the refiller holds it around a fill. */
  lock: RefillLock;
  /** `DispatchEvents.periodExhausted` (not imported: the dispatcher imports this file). */
  events: { periodExhausted(entityKey: string, digits: number, nextAt: number): void };
  clock: Clock;
  log: Logger;
  /** When an entity found due is due again if no fill ran (lock held elsewhere, Redis down): the refill tick. */
  retryMs: number;
  /** IDPOOL_FENCE_CHECK_MS: how often periods are checked against their fences (0: only at a refused push). */
  fenceCheckMs?: number;
  databaseBehind?(report: DatabaseBehindReport): void;
}

const PRUNE_EVERY_MS = 3600_000;

/** How long a raise waits for the entity's refill lock: a fill holds it for one reservation (and push). */
const RAISE_LOCK_WAIT_MS = 2000;

/** The numbers layer, with Redis or without: each period's pool filled from its SQL counter, pruned hourly at a fill. */
export class NumberPeriods implements PeriodPools, NumberAdmin {
  private readonly schemes = new WeakMap<NumberSettings, NumberScheme>();
  /** When (monotonic) each entity is next due a fill whatever its level. */
  private readonly dueAt = new Map<string, number>();
  /** When (Unix ms) each pruning last ran: the counters (`*`) or an entity's fences. */
  private readonly prunedAt = new Map<string, number>();
  private readonly fencesCheckedAt = new Map<string, number>();
  private readonly leadMs: number;

  constructor(private readonly options: NumberPeriodsOptions) {
    this.leadMs = options.store.inProcess ? LOCAL_PREFILL_LEAD_MS : REDIS_PREFILL_LEAD_MS;
  }

  scheme(entity: Pick<NumberEntity, 'key' | 'numbers'>): NumberScheme {
    const settings = entity.numbers;
    if (!settings) throw new Error(`entity ${entity.key} has no business-number format`);
    let scheme = this.schemes.get(settings);
    if (!scheme) this.schemes.set(settings, (scheme = NumberScheme.of(settings)));
    return scheme;
  }

  cap(entity: NumberEntity): number {
    return this.scheme(entity).poolCap(entity.maxSizePerTimes);
  }

  due(keys: readonly string[]): { keys: string[]; waitMs: number } {
    const now = this.options.clock.monotonic();
    const due: string[] = [];
    let next = Infinity;
    for (const key of keys) {
      let at = this.dueAt.get(key) ?? now;
      if (at <= now) {
        due.push(key);
        // Due again after a tick unless a fill says otherwise (a lock held elsewhere ends a refill before it).
        this.dueAt.set(key, (at = now + this.options.retryMs));
      }
      next = Math.min(next, at);
    }
    return { keys: due, waitMs: Math.max(0, next - now) };
  }

  async afterShort(entity: NumberEntity, count: number): Promise<boolean> {
    const scheme = this.scheme(entity);
    const { now, epochCurrent, slots, latest } = await this.options.store.state(entity.key);
    if (!epochCurrent) return false;
    const [live] = slots;
    if (live.period === undefined || now < live.start || now >= live.end) {
      if (scheme.calendar.at(now).start < latest)
        throw new UnavailableError(
          `${entity.key}: the Redis clock is behind a period already handed out (a failover to a server whose clock is behind); retry shortly`,
        );
      return false;
    }
    // A spent period: `period_short` with what remains, else `period_exhausted`.
    if (live.size >= count) return true;
    if (live.full && live.size > 0) throw new PeriodShortError(entity.key, live.period, count, live.size);
    if (!live.full) return false;
    const digits = scheme.template.seqWidth;
    this.options.events.periodExhausted(entity.key, digits, live.end);
    const seconds = Math.max(1, Math.ceil((live.end - now) / 1000));
    throw new PeriodExhaustedError(
      `${entity.key}: period ${live.period} has handed out all ${scheme.capacity} numbers of ${digits} digits; the next period starts in ${seconds} s`,
      seconds,
    );
  }

  async fill(entity: NumberEntity, need: number, sizing: PoolSizing): Promise<void> {
    const { store, clock } = this.options;
    const scheme = this.scheme(entity);
    let state = await store.state(entity.key);
    if (!state.epochCurrent) state = await this.resetEpoch(entity, scheme, state);
    // Periods by the store's clock: the one the takes will ask for.
    const { current, ahead, dueIn } = this.periodsAt(scheme, state.now);
    const mono = clock.monotonic();
    const held = (period: Period) => state.slots.find((slot) => slot.period === period.id);
    await this.reserve(entity, current, wanted(entity.step, held(current), need, sizing));
    // In process only the next period's first step: a process stopping within the lead loses it.
    const aheadSizing = store.inProcess
      ? { target: 0, lowWatermark: 0, max: Math.min(entity.step, this.cap(entity)) }
      : sizing;
    if (ahead) await this.reserve(entity, ahead, wanted(entity.step, held(ahead), 0, aheadSizing));
    // Due again at the boundary or the lead (`periodsAt`), or a fence check.
    this.dueAt.set(entity.key, Math.min(mono + dueIn, await this.carryBehind(entity, state)));
    await this.pruneOld(entity.key, scheme);
  }

  /**
   * Starts period `periodId` after `seq` under the refill lock (503 after {@link RAISE_LOCK_WAIT_MS}); 409 when the
   * line is past it; else waiting numbers ≤ seq are dropped so the next is seq + 1. Resolves to what it follows.
   */
  async raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint> {
    const { clock, lock, counter, store } = this.options;
    const scheme = this.scheme(entity);
    const period = this.named(entity, scheme, periodId);
    const capped = seq > scheme.capacity ? scheme.capacity : seq;
    const deadline = clock.monotonic() + RAISE_LOCK_WAIT_MS;
    let held: HeldLock | null;
    while (!(held = await lock.acquire(entity.key))) {
      if (clock.monotonic() > deadline)
        throw new UnavailableError(`${entity.key}: a refill holds the entity's lock; retry shortly`, 1);
      await clock.sleep(25);
    }
    try {
      const waiting = await store.waiting(entity.key, period);
      const issued = await store.issued(entity.key, period.id);
      // The line: one above the highest sequence reserved that is not still waiting (handed out, or dropped as a gap).
      const ready = new Set(waiting.map((n) => scheme.template.decode(n)?.seq));
      let line = issued;
      while (line > 0n && ready.has(line)) line--;
      if (capped <= line)
        throw new ConflictError(
          `period ${period.id} of "${entity.key}" is already past seq ${capped}: the next number is ${scheme.template.formatter(period)(line + 1n)}; nothing changed`,
        );
      const after = await counter.raise(entity.key, period, capped);
      await store.trim(entity.key, period, scheme.template.formatter(period)(capped), capped);
      // The next number follows: the lowest still waiting above the raise, else the counter.
      let next = after + 1n;
      for (const n of ready) if (n !== undefined && n > capped && n < next) next = n;
      return next - 1n;
    } finally {
      await held.release().catch(() => undefined);
    }
  }

  /** Now's period and how much of it is gone (dropped leftovers and gaps count: they are gone too). */
  async usage(entity: NumberEntity): Promise<NumberUsage> {
    const { store } = this.options;
    const scheme = this.scheme(entity);
    const { now, slots, fences } = await store.state(entity.key);
    const period = scheme.calendar.at(now);
    const ready = slots.find((s) => s.period === period.id)?.size ?? 0;
    const reserved = fences ? (fences.get(period.id) ?? 0n) : await store.issued(entity.key, period.id);
    const used = reserved - BigInt(ready);
    const { capacity, template, settings } = scheme;
    const digits = template.seqWidth;
    return { now, period, used: used > 0n ? used : 0n, ready, capacity, digits, timeZone: settings.timeZone };
  }

  /** Now's period, the next once its lead began, and the ms until due again (just after the boundary, or the lead). */
  periodsAt(scheme: NumberScheme, now: number): { current: Period; ahead?: Period; dueIn: number } {
    const current = scheme.calendar.at(now);
    const next = scheme.calendar.after(current);
    const leadStart = next ? next.start - this.leadMs : Infinity;
    const dueIn = Math.min(current.end - now + 1, now < leadStart ? leadStart - now : Infinity);
    return { current, ahead: now >= leadStart ? next : undefined, dueIn };
  }

  forget(entityKey: string): void {
    this.dueAt.delete(entityKey);
    this.prunedAt.delete(entityKey);
    this.fencesCheckedAt.delete(entityKey);
    this.options.store.forget?.(entityKey);
  }

  private async reserve(entity: NumberEntity, period: Period, want: number): Promise<void> {
    if (want <= 0) return;
    const { store, counter } = this.options;
    const scheme = this.scheme(entity);
    for (let carried = false; ; carried = true) {
      const range = await counter.reserve(entity.key, period, want, scheme.capacity);
      const full = !range || range.last >= scheme.capacity;
      if ((await store.pushRange(entity, scheme, period, range, full)) !== 'fenced' || carried) return;
      // Refused below the fence: the database went back (a restore), or another refiller's range went first.
      await this.carry(entity, period.id, range);
    }
  }

  /** Lists of another epoch may hold numbers handed out: dropped, the fences of now's period and the next raised to the counters. */
  private async resetEpoch(entity: NumberEntity, scheme: NumberScheme, state: PeriodState): Promise<PeriodState> {
    const { counter, store, log } = this.options;
    const current = scheme.calendar.at(state.now);
    const periods = [current, scheme.calendar.after(current)].filter((p): p is Period => p !== undefined);
    const fences = await Promise.all(periods.map(async (p) => [p.id, await counter.peek(entity.key, p.id)] as const));
    const after = await store.state(entity.key, fences);
    if (after.dropped) log.warn({ entity: entity.key }, 'business numbers filled in another Redis epoch dropped');
    return after;
  }

  /**
   * Every `fenceCheckMs`, periods whose counter is below the fence (a restored database) are carried now, not at a
   * next reservation a full list can put off for the whole period. Resolves to the next check (monotonic).
   */
  private async carryBehind(entity: NumberEntity, state: PeriodState): Promise<number> {
    const every = this.options.fenceCheckMs ?? 0;
    const now = this.options.clock.monotonic();
    if (every <= 0) return Infinity;
    const last = this.fencesCheckedAt.get(entity.key) ?? -Infinity;
    if (now - last < every) return last + every;
    this.fencesCheckedAt.set(entity.key, now);
    for (const { period } of state.slots) if (period !== undefined) await this.carry(entity, period);
    return now + every;
  }

  /**
   * Carries a counter gone back below the fence past it, logged and reported: the counter (read after the fence)
   * is below it, or the `refused` range reaches it. A refused range wholly below a fence the counter has passed is
   * another refiller's range pushed first (a lock taken over), not a restore.
   */
  private async carry(entity: NumberEntity, periodId: string, refused?: SeqRange): Promise<void> {
    const { store, counter: counters, log } = this.options;
    const fence = await store.issued(entity.key, periodId);
    if (fence === 0n) return;
    const counter = await counters.peek(entity.key, periodId);
    if (counter >= fence && !(refused && refused.last >= fence)) return;
    const seen = refused ? refused.first - 1n : counter;
    const period = this.named(entity, this.scheme(entity), periodId);
    log.error(
      { entity: entity.key, period: period.id, counter: seen.toString(), fence: fence.toString() },
      'database_behind: the business-number counter is below what Redis already pushed (a restored database); carried past it',
    );
    const after = await counters.raise(entity.key, period, fence);
    this.options.databaseBehind?.({
      entityKey: entity.key,
      period: period.id,
      databaseOffset: seen,
      record: 'fence',
      recordedOffset: fence,
      fence,
      carriedTo: after,
    });
  }

  /** The period named `periodId` of the entity's calendar, or a 400-worthy complaint. */
  private named(entity: NumberEntity, scheme: NumberScheme, periodId: string): Period {
    const period = scheme.calendar.named(periodId);
    if (!period)
      throw new RangeError(
        `"${periodId}" is no ${scheme.template.reset} period of ${entity.key} (${scheme.settings.timeZone}); periods are named like ${scheme.calendar.at(this.options.clock.now()).id}`,
      );
    return period;
  }

  /** Old periods' counters after the retention, at most hourly (a fill, the library's start); a failure logged. */
  pruneCounters(): Promise<void> {
    const before = this.options.clock.now() - NUMBER_PERIOD_RETENTION_MS;
    return this.pruneHourly('*', async () => this.options.counter.prune?.(before));
  }

  /** Hourly: the counters, and (Redis) this entity's fences. */
  private async pruneOld(entityKey: string, scheme: NumberScheme): Promise<void> {
    const { clock, store } = this.options;
    await this.pruneCounters();
    const before = clock.now() - NUMBER_PERIOD_RETENTION_MS;
    if (store.pruneFences)
      await this.pruneHourly(entityKey, async () => store.pruneFences?.(entityKey, scheme.calendar.at(before).id));
  }

  private async pruneHourly(key: string, prune: () => Promise<unknown>): Promise<void> {
    const now = this.options.clock.now();
    if (now - (this.prunedAt.get(key) ?? 0) < PRUNE_EVERY_MS) return;
    this.prunedAt.set(key, now);
    try {
      await prune();
    } catch (err) {
      this.options.log.warn({ entity: key, err: errorMessage(err) }, 'pruning business-number periods failed');
    }
  }
}

/**
 * How many a fill reserves: none while the pool holds the low watermark and `need`, or is full; else whole steps
 * up to the target, past `max` only for a take.
 */
function wanted(step: number, held: PeriodSlot | undefined, need: number, sizing: PoolSizing): number {
  const { target, lowWatermark, max } = sizing;
  const size = held?.size ?? 0;
  if (held?.full || (held && size >= Math.max(need, lowWatermark))) return 0;
  const stepped = Math.max(step, Math.ceil((Math.max(need, target) - size) / step) * step);
  return Math.max(need - size, Math.min(stepped, max - size));
}

/** `range` in take order (trend: shuffled per step): a {@link NumberRun} below 2^53, else (or `formatted`) strings. */
export function numberRun(
  scheme: NumberScheme,
  entity: Pick<EntityConfig, 'mode' | 'step'>,
  period: Period,
  range: SeqRange,
  formatted = false,
): NumberRun | string[] {
  const count = Number(range.last - range.first + 1n);
  const big = range.last > BigInt(Number.MAX_SAFE_INTEGER);
  const first = Number(range.first);
  const seqs = big ? Array.from({ length: count }, (_, i) => range.first + BigInt(i)) : consecutive(first, count);
  if (entity.mode === 'trend')
    for (let s = 0; s < count; s += entity.step) shuffle(seqs, s, Math.min(s + entity.step, count));
  if (big || formatted) return Array.from<number | bigint, string>(seqs, scheme.template.formatter(period));
  return { ...scheme.template.parts(period), seqs: seqs as Float64Array };
}

/** `count` sequences from `first`: a loop, not Float64Array.map, whose callback per sequence cost a third of the push's encoding. */
function consecutive(first: number, count: number): Float64Array {
  const seqs = new Float64Array(count);
  for (let i = 0; i < count; i++) seqs[i] = first + i;
  return seqs;
}
