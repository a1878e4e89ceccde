/**
 * Business-number takes (docs/numbers.md), behind one narrow interface,
 * {@link NumberTakes}: the take service picks this kind for an entity with
 * a `format`, as it picks segments or snowflake ids for the others.
 *
 * With Redis ({@link RedisNumberTakes}) the Redis server's clock decides the
 * period (the `ids` list holding now's period expires at its end, and the
 * number functions read `TIME` to make the next period live), the period's
 * numbers wait in Redis already formatted, and the refill here keeps now's period and,
 * ahead of the boundary, the next one filled from the per-period counters
 * in SQL. Without Redis ({@link LocalNumberTakes}) the process clock decides.
 */
import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import { PeriodShortError, PoolExhaustedError, UnavailableError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import type { Period } from '../numbers/period';
import type { DatabaseBehindReport } from '../segment/high-water';
import { NumberScheme } from '../numbers/scheme';
import {
  LocalNumbers,
  type LocalNumbersOptions,
  NumberSchemes,
  formatRange,
  namedPeriod,
  periodFull,
  periodLine,
  raiseBelowLine,
} from '../segment/local-numbers';
import { NUMBER_PERIOD_RETENTION_MS, type NumberCounter, type SeqRange } from '../segment/number-counter';
import type { Demand } from './demand';
import type { DispatchEvents } from './dispatcher';
import { NUMBERS_PER_PUSH, type NumberPushResult, type NumberState, type RedisNumberStore } from './number-store';
import type { RefillLock } from './pool-store';
import { entityRateLimited } from './rate-limit';
import type { NumberRun } from './rpush-ids';
import { PUSHES_IN_FLIGHT, shuffle } from './segment-push';
import { type TakenIds, listedIds } from './taken-ids';
import { type Periodic, every } from '../schedule';

/** How long a raise waits for the entity's refill lock: a refill holds it for one reservation and push. */
const RAISE_LOCK_WAIT_MS = 2000;

/** The refill tick's wait while no entity has a `format` ({@link RedisNumberTakes.wake} ends it when one is registered). */
const IDLE_TICK_MS = 1000;

/** Takes business numbers of an entity with a `format`. */
export interface NumberTakes {
  /** Whether one turn's takes of an entity share one {@link takeShared} call (the take service's `Taker`). */
  readonly coalesce: boolean;
  /** `count` numbers of now's period, all or nothing, as strings. */
  take(entity: EntityConfig, count: number): Promise<TakenIds>;
  /** One attempt at `total` numbers for a turn's takes; undefined: answer them take by take. */
  takeShared(entity: EntityConfig, total: number): Promise<TakenIds | undefined>;
  /** Moves the counter of period `periodId` up to at least `seq` (a team moving from an INCR counter); resolves to it after. */
  raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint>;
  /** How much of now's period is used, by the clock that decides the period (the ops sampler, `GET /admin/apps`). */
  usage(entity: EntityConfig): Promise<NumberUsage>;
}

/** Now's period of a business-number entity and how much of it is gone. */
export interface NumberUsage {
  /** Now by the deciding clock (Redis's with Redis, the process's without), Unix ms. */
  readonly now: number;
  readonly period: Period;
  /**
   * Sequences of the period no take can have any more: the highest one
   * reserved (pushed to Redis, or reserved in process) less those still
   * ready. Dropped leftovers and gaps count as used: they are gone too.
   */
  readonly used: bigint;
  /** Numbers of the period ready to take. */
  readonly ready: number;
  /** The period's highest sequence, 10^N − 1. */
  readonly capacity: bigint;
  /** N of `{seq:N}`. */
  readonly digits: number;
  readonly timeZone: string;
}

/** The usage figures of `period` with `reserved` sequences gone from the counter and `ready` of them waiting. */
function usageOf(scheme: NumberScheme, now: number, period: Period, reserved: bigint, ready: number): NumberUsage {
  const used = reserved - BigInt(ready);
  return {
    now,
    period,
    used: used > 0n ? used : 0n,
    ready,
    capacity: scheme.capacity,
    digits: scheme.template.seqWidth,
    timeZone: scheme.settings.timeZone,
  };
}

/** Entities whose numbers to keep filled. */
export interface NumberCatalog {
  get(key: string): EntityConfig | undefined;
  numberKeys(): string[];
}

/**
 * Range `range` of `period` as the push writes it: a {@link NumberRun}
 * (sequences as numbers, the date written once) below 2^53, formatted
 * strings beyond; a trend entity's shuffled within each step.
 */
function numberRun(scheme: NumberScheme, entity: EntityConfig, period: Period, range: SeqRange): NumberRun | string[] {
  if (range.last > BigInt(Number.MAX_SAFE_INTEGER)) return formatRange(scheme, entity, period, range);
  const first = Number(range.first);
  const seqs = new Float64Array(Number(range.last) - first + 1);
  for (let i = 0; i < seqs.length; i++) seqs[i] = first + i;
  if (entity.mode === 'trend')
    for (let s = 0; s < seqs.length; s += entity.step) shuffle(seqs, s, Math.min(s + entity.step, seqs.length));
  return { ...scheme.template.parts(period), seqs };
}

export interface RedisNumberTakesOptions {
  store: RedisNumberStore;
  counter: NumberCounter;
  lock: RefillLock;
  entities: NumberCatalog;
  demand: Pick<Demand, 'observe' | 'sizing'>;
  events: DispatchEvents;
  clock: Clock;
  log: Logger;
  /** The refill tick (IDPOOL_REFILL_INTERVAL_MS). */
  intervalMs: number;
  /** How long a take short of numbers waits for a refill before its 503 (the dispatcher's 250 ms). */
  shortWaitMs?: number;
  /**
   * How long before a boundary the next period is filled: a minute, so the
   * first take after it is served from Redis however slow the database.
   */
  prefillLeadMs?: number;
  /**
   * How often each entity's live and staged periods are compared with their
   * fences (IDPOOL_FENCE_CHECK_MS; 0 or absent: only when a push is refused).
   */
  fenceCheckMs?: number;
  /** A period's counter was found behind its fence (a restored database) and carried past it. */
  databaseBehind?(report: DatabaseBehindReport): void;
}

/**
 * Business numbers on Redis: the period by the Redis clock, the refill from
 * SQL per period. A take is a plain pool's take of the entity's `ids` list
 * (it holds only now's period's numbers and expires at its end), coalesced
 * per turn as plain takes are; only a short take asks the number functions
 * why (the period just began, is full, or needs a refill).
 */
export class RedisNumberTakes implements NumberTakes {
  readonly coalesce = true;
  private readonly schemes = new NumberSchemes();
  private readonly refills = new Map<string, Promise<void>>();
  /** Numbers this instance took per entity, running: what demand is measured from. */
  private readonly taken = new Map<string, number>();
  /** The refill tick (schedule.ts): stop() waits for the one under way. */
  private readonly ticks: Periodic;
  private stopped = false;
  private lastPrune = 0;
  /** When (this process's monotonic clock) the soonest boundary a refill saw falls by the Redis clock: the tick wakes for it. */
  private nextBoundary = Infinity;
  /** When (monotonic) each entity's periods were last compared with their fences. */
  private readonly fencesCheckedAt = new Map<string, number>();

  constructor(private readonly options: RedisNumberTakesOptions) {
    this.ticks = every(
      () => this.nextWait(),
      () => this.tick(),
      options.clock,
    );
  }

  async takeShared(entity: EntityConfig, total: number): Promise<TakenIds | undefined> {
    const r = await this.options.store.take(entity.key, total, entity.maxSizePerSecond);
    if (r.kind !== 'ok') return undefined;
    this.served(entity, total, r.remaining);
    return r.ids;
  }

  async take(entity: EntityConfig, count: number): Promise<TakenIds> {
    const deadline = this.options.clock.monotonic() + (this.options.shortWaitMs ?? 250);
    for (let attempt = 0; ; attempt++) {
      const r = await this.options.store.take(entity.key, count, entity.maxSizePerSecond);
      if (r.kind === 'ok') {
        this.served(entity, count, r.remaining);
        return r.ids;
      }
      if (r.kind === 'rate_limited') {
        this.options.events.rateLimited(entity.key);
        throw entityRateLimited(entity.key, entity.maxSizePerSecond, r.retryAfterMs);
      }
      if (attempt > 0 && this.options.clock.monotonic() > deadline) {
        this.options.events.refused(entity.key);
        throw new PoolExhaustedError(`${entity.key}: no business numbers ready; retry shortly`);
      }
      // Short: the period may have just begun (its numbers staged), be full, or need a refill.
      if (r.kind === 'short' && (await this.readyAfterShort(entity, count))) continue;
      // The refill pushes in calls: look again every 20 ms rather than after its last (as the dispatcher does).
      const refill = this.refill(entity, count).then(
        () => undefined,
        (err: unknown) => ({ err: err as Error }),
      );
      const failed = await Promise.race([refill, this.options.clock.sleep(20).then(() => undefined)]);
      if (failed) {
        this.options.events.refused(entity.key);
        throw failed.err;
      }
    }
  }

  /**
   * After a short take: reads the lists (making a period that began live),
   * true when `count` are now ready; throws when the period is full or the
   * Redis clock is behind a period already served.
   */
  private async readyAfterShort(entity: EntityConfig, count: number): Promise<boolean> {
    const scheme = this.schemes.of(entity);
    const state = await this.options.store.state(entity.key);
    if (!state.epochCurrent) return false;
    const [live] = state.slots;
    if (live.period !== undefined && live.start <= state.now && state.now < live.end) {
      if (live.size >= count) return true;
      if (live.full && live.size > 0) throw new PeriodShortError(entity.key, live.period, count, live.size);
      if (live.full) {
        this.options.events.periodExhausted(entity.key, scheme.template.seqWidth, live.end);
        throw periodFull(entity, scheme, live.period, live.end - state.now);
      }
    } else if (scheme.calendar.at(state.now).start < state.latest)
      throw new UnavailableError(
        `${entity.key}: the Redis clock is behind a period already handed out (a failover to a server whose clock is behind); retry shortly`,
      );
    return false;
  }

  /** Counts a take for demand; a list below its watermark is refilled now. */
  private served(entity: EntityConfig, count: number, remaining: number): void {
    this.taken.set(entity.key, (this.taken.get(entity.key) ?? 0) + count);
    if (remaining < this.sizing(entity, this.schemes.of(entity)).low) void this.refillQuietly(entity);
  }

  /** The list's depth by demand, as a plain pool's, within the scheme's cap ({@link NumberScheme.poolCap}). */
  private sizing(entity: EntityConfig, scheme: NumberScheme): { target: number; low: number; cap: number } {
    const { target, lowWatermark, max } = this.options.demand.sizing(entity, scheme.poolCap(entity.maxSizePerTimes));
    return { target, low: lowWatermark, cap: max };
  }

  /**
   * Starts period `periodId` after `seq`, under the entity's refill lock (no
   * push in flight): 409 when the period's line is already past it;
   * otherwise its counter moves up to `seq` and the numbers at or below it
   * still waiting are dropped, those above kept, so the next number is
   * seq + 1. Resolves to the sequence the next number follows.
   */
  async raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint> {
    const scheme = this.schemes.of(entity);
    const period = namedPeriod(scheme, entity, periodId, this.options.clock.now());
    const capped = seq > scheme.capacity ? scheme.capacity : seq;
    const held = await this.lockWithin(entity.key, RAISE_LOCK_WAIT_MS);
    try {
      const { store, counter } = this.options;
      // Handed out is at most what was pushed (the fence): a reservation never pushed was never taken.
      const waiting = await store.waiting(entity.key, period.id);
      const line = periodLine(scheme, (await store.fence(entity.key, period.id)) ?? 0n, waiting);
      if (capped < line) throw raiseBelowLine(entity, scheme, period, capped, line);
      const after = await counter.raise(entity.key, period, capped);
      const upTo = scheme.template.formatter(period)(capped);
      await store.trim(entity.key, period.id, upTo, capped, entity.step);
      const next = waiting
        .filter((n) => n > upTo)
        .sort()
        .at(0);
      return next === undefined ? after : (scheme.template.decode(next)?.seq ?? after + 1n) - 1n;
    } finally {
      await held.release().catch(() => undefined);
    }
  }

  /** The entity's refill lock, asked again until `ms` have passed (a refill holds it for a moment); then 503. */
  private async lockWithin(entityKey: string, ms: number): Promise<{ release(): Promise<void> }> {
    const deadline = this.options.clock.monotonic() + ms;
    for (;;) {
      const held = await this.options.lock.acquire(entityKey);
      if (held) return held;
      if (this.options.clock.monotonic() > deadline)
        throw new UnavailableError(`${entityKey}: a refill holds the entity's lock; retry shortly`, 1);
      await this.options.clock.sleep(25);
    }
  }

  /** Now's period by the Redis clock: its fence (the highest sequence pushed) less what its slot still holds. */
  async usage(entity: EntityConfig): Promise<NumberUsage> {
    const scheme = this.schemes.of(entity);
    const { state, fences } = await this.options.store.standing(entity.key);
    const period = scheme.calendar.at(state.now);
    const slot = state.slots.find((s) => s.period === period.id);
    const fence = fences.get(period.id) ?? 0n;
    return usageOf(scheme, state.now, period, fence, slot?.size ?? 0);
  }

  /**
   * Refills every business-number entity each tick, and once more just
   * after a boundary the refills saw coming (by the Redis clock), so the
   * next period's numbers become the `ids` list that `FCALL idpool_pop`
   * pops at once, not a tick later; prunes old counters hourly.
   */
  start(): void {
    this.ticks.start();
    void this.ticks.runNow();
  }

  /**
   * A business-number entity was registered (here or, seen by a refresh,
   * elsewhere): an instance that had none waits a second between ticks, so
   * this one's first refill starts now rather than up to a second later.
   */
  wake(): void {
    this.ticks.wake();
  }

  /** Stops ticking and waits for the tick and the refills under way; no refill starts after it (the connections close next). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.ticks.stop();
    await Promise.allSettled(this.refills.values());
  }

  /**
   * The wait before the next tick: the refill interval, cut short to just
   * after the soonest boundary the last tick saw coming; with no number
   * entity a second, when the service's other loops wake too (wake() ends it).
   */
  private nextWait(): number {
    if (this.options.entities.numberKeys().length === 0) return IDLE_TICK_MS;
    const untilBoundary = this.nextBoundary - this.options.clock.monotonic() + 1;
    return Math.max(0, Math.min(this.options.intervalMs, untilBoundary));
  }

  private async tick(): Promise<void> {
    this.nextBoundary = Infinity;
    for (const key of this.options.entities.numberKeys()) {
      // Stopped mid-tick: the next entity's refill would meet closed connections.
      if (this.stopped) return;
      const entity = this.options.entities.get(key);
      if (entity) await this.refillQuietly(entity);
    }
    if (this.stopped) return;
    await this.pruneHourly();
  }

  private async refillQuietly(entity: EntityConfig): Promise<void> {
    try {
      await this.refill(entity);
    } catch (err) {
      this.options.log.warn({ entity: entity.key, err: errorMessage(err) }, 'business-number refill failed');
    }
  }

  private async pruneHourly(): Promise<void> {
    const now = this.options.clock.now();
    if (now - this.lastPrune < 3600_000) return;
    this.lastPrune = now;
    try {
      const counter = this.options.counter as NumberCounter & { prune?(before: number): Promise<number> };
      await counter.prune?.(now - NUMBER_PERIOD_RETENTION_MS);
      for (const key of this.options.entities.numberKeys()) {
        const entity = this.options.entities.get(key);
        if (!entity) continue;
        const old = this.schemes.of(entity).calendar.at(now - NUMBER_PERIOD_RETENTION_MS);
        await this.options.store.pruneFences(key, old.id);
      }
    } catch (err) {
      this.options.log.warn({ err: errorMessage(err) }, 'pruning business-number counters failed');
    }
  }

  /** One refill of the entity at a time in this process; across instances, its refill lock. `need`: a take waits for that many. */
  refill(entity: EntityConfig, need = 0): Promise<void> {
    let running = this.refills.get(entity.key);
    // Stopped: no refill starts (a take waits out its deadline and answers 503).
    if (!running && this.stopped) return Promise.resolve();
    if (!running) {
      running = this.refillLocked(entity, need).finally(() => this.refills.delete(entity.key));
      this.refills.set(entity.key, running);
    }
    return running;
  }

  private async refillLocked(entity: EntityConfig, need: number): Promise<void> {
    const held = await this.options.lock.acquire(entity.key);
    // Another instance refills it now: the take waits and looks again.
    if (!held) return;
    try {
      await this.refillPeriods(entity, need);
    } finally {
      await held.release().catch(() => undefined);
    }
  }

  private async refillPeriods(entity: EntityConfig, need: number): Promise<void> {
    const scheme = this.schemes.of(entity);
    let state = await this.options.store.state(entity.key);
    if (!state.epochCurrent) {
      await this.resetEpoch(entity, scheme, state);
      state = await this.options.store.state(entity.key);
    }
    this.options.demand.observe(entity.key, this.taken.get(entity.key) ?? 0);
    // Periods by the Redis clock: the one the takes will ask for.
    const current = scheme.calendar.at(state.now);
    this.nextBoundary = Math.min(this.nextBoundary, this.options.clock.monotonic() + current.end - state.now);
    await this.fill(entity, scheme, state, current, need);
    const next = scheme.calendar.after(current);
    if (next && state.now >= next.start - (this.options.prefillLeadMs ?? 60_000))
      await this.fill(entity, scheme, state, next, 0);
    await this.carryBehind(entity, scheme, state);
  }

  /**
   * Every `fenceCheckMs`, under the refill lock: a live or staged period
   * whose counter is below its fence (a database restored from a backup) is
   * carried past it now, not at its next reservation, which a full list can
   * put off for as long as the period lasts; until then the fence is the
   * only record of the numbers issued since the backup. The fence is read
   * before the counter: it only rises by pushes of ranges already committed.
   */
  private async carryBehind(entity: EntityConfig, scheme: NumberScheme, state: NumberState): Promise<void> {
    const every = this.options.fenceCheckMs ?? 0;
    const now = this.options.clock.monotonic();
    if (every <= 0 || now - (this.fencesCheckedAt.get(entity.key) ?? -Infinity) < every) return;
    this.fencesCheckedAt.set(entity.key, now);
    for (const slot of state.slots) {
      if (slot.period === undefined) continue;
      const fence = await this.options.store.fence(entity.key, slot.period);
      if (fence === undefined) continue;
      const counter = await this.options.counter.peek(entity.key, slot.period);
      if (counter >= fence) continue;
      await this.carry(entity, namedPeriod(scheme, entity, slot.period, this.options.clock.now()), counter, fence);
    }
  }

  /** Moves the period's counter past `fence`, logs `database_behind` and reports it. */
  private async carry(entity: EntityConfig, period: Period, counter: bigint, fence: bigint): Promise<void> {
    this.options.log.error(
      { entity: entity.key, period: period.id, counter: counter.toString(), fence: fence.toString() },
      'database_behind: the business-number counter is below what Redis already pushed (a restored database); carried past it',
    );
    const after = await this.options.counter.raise(entity.key, period, fence);
    this.options.databaseBehind?.({
      entityKey: entity.key,
      period: period.id,
      databaseOffset: counter,
      record: 'fence',
      recordedOffset: fence,
      fence,
      carriedTo: after,
    });
  }

  /**
   * The lists may hold numbers already handed out (a restart or failover):
   * dropped, and the fences of now's period and the next raised to what the
   * counters say may have been issued.
   */
  private async resetEpoch(entity: EntityConfig, scheme: NumberScheme, state: NumberState): Promise<void> {
    const current = scheme.calendar.at(state.now);
    const periods = [current, scheme.calendar.after(current)].filter((p): p is Period => p !== undefined);
    const fences = await Promise.all(
      periods.map(async (p) => [p.id, await this.options.counter.peek(entity.key, p.id)] as const),
    );
    if (await this.options.store.resetEpoch(entity.key, fences))
      this.options.log.warn({ entity: entity.key }, 'business numbers filled in another Redis epoch dropped');
  }

  private async fill(
    entity: EntityConfig,
    scheme: NumberScheme,
    state: NumberState,
    period: Period,
    need: number,
  ): Promise<void> {
    // The list holding the period now (live or staged; the push picks which by the Redis clock).
    const held = state.slots.find((slot) => slot.period === period.id);
    const size = held?.size ?? 0;
    if (held?.full) return;
    const { target, low, cap } = this.sizing(entity, scheme);
    if (held && size >= Math.max(need, low)) return;
    // Whole steps up to the target (a trend entity shuffles within them), never past the cap unless a take waits for more.
    const stepped = Math.max(entity.step, Math.ceil((Math.max(need, target) - size) / entity.step) * entity.step);
    const want = Math.max(need - size, Math.min(stepped, cap - size));
    if (want <= 0) return;
    for (let carried = false; ; carried = true) {
      const range = await this.options.counter.reserve(entity.key, period, want, scheme.capacity);
      const full = !range || range.last >= scheme.capacity;
      const result = await this.push(entity, scheme, period, range, full);
      if (result !== 'fenced' || carried) return;
      // Refused below the fence: the database went back (a restore). Carry the counter past the fence, once.
      const fence = await this.options.store.fence(entity.key, period.id);
      if (fence === undefined) return;
      await this.carry(entity, period, range ? range.first - 1n : scheme.capacity, fence);
    }
  }

  /**
   * Pushes `range` of `period`, formatted, in calls of about
   * {@link NUMBERS_PER_PUSH}; a trend entity's calls hold whole steps, so
   * each call's lowest and highest sequence bound what it holds (the fence).
   */
  private async push(
    entity: EntityConfig,
    scheme: NumberScheme,
    period: Period,
    range: SeqRange | undefined,
    full: boolean,
  ): Promise<NumberPushResult> {
    if (!range) return this.options.store.push(entity.key, period, [], undefined, undefined, full);
    const perCall =
      entity.mode === 'trend'
        ? entity.step * Math.max(1, Math.floor(NUMBERS_PER_PUSH / entity.step))
        : NUMBERS_PER_PUSH;
    const inFlight: Promise<NumberPushResult>[] = [];
    let outcome: NumberPushResult = 'ok';
    for (let lowest = range.first; lowest <= range.last && outcome === 'ok'; lowest += BigInt(perCall)) {
      const end = lowest + BigInt(perCall) - 1n;
      const highest = end < range.last ? end : range.last;
      const numbers = numberRun(scheme, entity, period, { first: lowest, last: highest });
      const call = this.options.store.push(
        entity.key,
        period,
        numbers,
        lowest,
        highest,
        full && highest === range.last,
      );
      // Handled now, awaited in order below: one failing while an earlier one is awaited is no unhandled rejection.
      call.catch(() => undefined);
      inFlight.push(call);
      // As a segment's push (segment-push.ts): a few calls on the wire at once, Redis runs them in order.
      const oldest = inFlight.length >= PUSHES_IN_FLIGHT ? inFlight.shift() : undefined;
      if (oldest) outcome = await oldest;
    }
    // A refusal is final for the calls after it too (the epoch, `latest` and the clock only move on; a call
    // above the fence is safe), so the first refusal is the answer.
    for (const call of inFlight) {
      const result = await call;
      if (outcome === 'ok') outcome = result;
    }
    return outcome;
  }
}

/** {@link LocalNumbers} as the take service's business-number take (the embedded service). */
export class LocalNumberTakes implements NumberTakes {
  readonly coalesce = false;
  private readonly local: LocalNumbers;

  constructor(
    options: Omit<LocalNumbersOptions, 'onPeriodFull'> & { events: Pick<DispatchEvents, 'periodExhausted'> },
  ) {
    this.local = new LocalNumbers({
      ...options,
      onPeriodFull: (entityKey, digits, nextAt) => options.events.periodExhausted(entityKey, digits, nextAt),
    });
  }

  async take(entity: EntityConfig, count: number): Promise<TakenIds> {
    return listedIds(await this.local.take(entity, count));
  }

  takeShared(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint> {
    return this.local.raise(entity, periodId, seq);
  }

  /** Prunes old periods' counters now and hourly. */
  start(): void {
    this.local.start();
  }

  stop(): void {
    this.local.stop();
  }

  /** Now's period by the process clock: its counter less what this process holds reserved and not yet handed out. */
  async usage(entity: EntityConfig): Promise<NumberUsage> {
    const { scheme, now, period, reserved, ready } = await this.local.standing(entity);
    return usageOf(scheme, now, period, reserved, ready);
  }
}
