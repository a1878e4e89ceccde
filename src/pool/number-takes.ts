/**
 * Business-number takes (docs/numbers.md), behind one narrow interface,
 * {@link NumberTakes}: the take service picks this kind for an entity with
 * a `format`, as it picks segments or snowflake ids for the others.
 *
 * With Redis ({@link RedisNumberTakes}) the Redis server's clock decides the
 * period (`idpool_number_take` reads `TIME`), the period's numbers wait in
 * Redis already formatted, and the refill here keeps now's period and,
 * ahead of the boundary, the next one filled from the per-period counters
 * in SQL. Without Redis ({@link LocalNumberTakes}) the process clock decides.
 */
import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import { PoolExhaustedError, UnavailableError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import type { Period } from '../numbers/period';
import { NumberScheme } from '../numbers/scheme';
import {
  LocalNumbers,
  type LocalNumbersOptions,
  NumberSchemes,
  formatRange,
  namedPeriod,
  periodFull,
} from '../segment/local-numbers';
import { NUMBER_PERIOD_RETENTION_MS, type NumberCounter, type SeqRange } from '../segment/number-counter';
import type { Demand } from './demand';
import type { DispatchEvents } from './dispatcher';
import { NUMBERS_PER_PUSH, type NumberSlot, type NumberState, type RedisNumberStore } from './number-store';
import type { RefillLock } from './pool-store';
import { entityRateLimited } from './rate-limit';
import { type TakenIds, listedIds } from './taken-ids';

/** Takes business numbers of an entity with a `format`. */
export interface NumberTakes {
  /**
   * Not coalesced by the take service (its `Taker`): each take is one
   * function call that picks its period itself; sharing one call per turn
   * is left for later (docs/benchmarks.md).
   */
  readonly coalesce: false;
  /** `count` numbers of now's period, all or nothing, as strings. */
  take(entity: EntityConfig, count: number): Promise<TakenIds>;
  /** Never called while `coalesce` is false; answers "take by take". */
  takeShared(entity: EntityConfig, total: number): Promise<TakenIds | undefined>;
  /** Moves the counter of period `periodId` up to at least `seq` (a team moving from an INCR counter); resolves to it after. */
  raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint>;
}

/** Entities whose numbers to keep filled. */
export interface NumberCatalog {
  get(key: string): EntityConfig | undefined;
  numberKeys(): string[];
}

export interface RedisNumberTakesOptions {
  store: RedisNumberStore;
  counter: NumberCounter;
  lock: RefillLock;
  entities: NumberCatalog;
  demand: Pick<Demand, 'observe' | 'target' | 'lowWatermark'>;
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
}

/** Business numbers on Redis: the period by the Redis clock, the refill from SQL per period. */
export class RedisNumberTakes implements NumberTakes {
  readonly coalesce = false;
  private readonly schemes = new NumberSchemes();
  private readonly refills = new Map<string, Promise<void>>();
  /** Numbers this instance took per entity, running: what demand is measured from. */
  private readonly taken = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private lastPrune = 0;

  constructor(private readonly options: RedisNumberTakesOptions) {}

  async take(entity: EntityConfig, count: number): Promise<TakenIds> {
    const scheme = this.schemes.of(entity);
    const deadline = this.options.clock.monotonic() + (this.options.shortWaitMs ?? 250);
    for (let attempt = 0; ; attempt++) {
      const r = await this.options.store.take(entity.key, count, entity.maxSizePerSecond);
      switch (r.kind) {
        case 'ok':
          this.taken.set(entity.key, (this.taken.get(entity.key) ?? 0) + count);
          if (r.remaining < this.options.demand.lowWatermark(entity)) void this.refillQuietly(entity);
          return r.numbers;
        case 'rate_limited':
          this.options.events.rateLimited(entity.key);
          throw entityRateLimited(entity.key, entity.maxSizePerSecond, r.retryAfterMs);
        case 'period_full':
          // Redis's clock said how long the period has left; its end is the calendar's boundary (one instant for the
          // fleet, not this instance's now plus that wait, which drifts by milliseconds and would not fold as one alarm).
          this.options.events.periodExhausted(
            entity.key,
            scheme.template.seqWidth,
            scheme.calendar.at(this.options.clock.now() + r.msToPeriodEnd - 1).end,
          );
          throw periodFull(entity, scheme, 'now', r.msToPeriodEnd);
        case 'period_stale':
          throw new UnavailableError(
            `${entity.key}: the Redis clock is behind a period already handed out (a failover to a server whose clock is behind); retry shortly`,
          );
        case 'epoch_changed':
        case 'short':
          if (attempt > 0 && this.options.clock.monotonic() > deadline) {
            this.options.events.refused(entity.key);
            throw new PoolExhaustedError(`${entity.key}: no business numbers ready; retry shortly`);
          }
          try {
            await this.refill(entity);
          } catch (err) {
            this.options.events.refused(entity.key);
            throw err;
          }
          if (attempt > 0) await this.options.clock.sleep(10);
      }
    }
  }

  takeShared(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  async raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint> {
    const scheme = this.schemes.of(entity);
    const period = namedPeriod(scheme, entity, periodId);
    const capped = seq > scheme.capacity ? scheme.capacity : seq;
    const after = await this.options.counter.raise(entity.key, period, capped);
    await this.options.store.reset(entity.key, period.id, [[period.id, after]]);
    return after;
  }

  /** Refills every business-number entity each tick; prunes old counters hourly. */
  start(): void {
    const tick = async () => {
      for (const key of this.options.entities.numberKeys()) {
        const entity = this.options.entities.get(key);
        if (entity) await this.refillQuietly(entity);
      }
      await this.pruneHourly();
      if (!this.stopped) this.timer = setTimeout(() => void tick(), this.options.intervalMs);
    };
    this.timer = setTimeout(() => void tick(), 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled(this.refills.values());
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

  /** One refill of the entity at a time in this process; across instances, its refill lock. */
  refill(entity: EntityConfig): Promise<void> {
    let running = this.refills.get(entity.key);
    if (!running) {
      running = this.refillLocked(entity).finally(() => this.refills.delete(entity.key));
      this.refills.set(entity.key, running);
    }
    return running;
  }

  private async refillLocked(entity: EntityConfig): Promise<void> {
    const held = await this.options.lock.acquire(entity.key);
    // Another instance refills it now: the take waits and looks again.
    if (!held) return;
    try {
      await this.refillPeriods(entity);
    } finally {
      await held.release().catch(() => undefined);
    }
  }

  private async refillPeriods(entity: EntityConfig): Promise<void> {
    const scheme = this.schemes.of(entity);
    let state = await this.options.store.state(entity.key);
    if (!state.epochCurrent) {
      await this.resetEpoch(entity, scheme, state);
      state = await this.options.store.state(entity.key);
    }
    this.options.demand.observe(entity.key, this.taken.get(entity.key) ?? 0);
    // Periods by the Redis clock: the one the takes will ask for.
    const current = scheme.calendar.at(state.now);
    await this.fill(entity, scheme, state, current);
    const next = scheme.calendar.after(current);
    // Read again: the fill above may have taken the slot the snapshot showed free (a push there would be refused, its numbers lost).
    if (next && state.now >= next.start - (this.options.prefillLeadMs ?? 60_000))
      await this.fill(entity, scheme, await this.options.store.state(entity.key), next);
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
    if (await this.options.store.reset(entity.key, 'epoch', fences))
      this.options.log.warn({ entity: entity.key }, 'business numbers filled in another Redis epoch dropped');
  }

  private async fill(entity: EntityConfig, scheme: NumberScheme, state: NumberState, period: Period): Promise<void> {
    const slot = slotFor(state, period);
    if (slot === undefined) return;
    const held: NumberSlot = state.slots[slot];
    const size = held.period === period.id ? held.size : 0;
    if (held.period === period.id && held.full) return;
    if (held.period === period.id && size >= this.options.demand.lowWatermark(entity)) return;
    const target = this.options.demand.target(entity);
    const want = Math.max(entity.step, Math.ceil((target - size) / entity.step) * entity.step);
    for (let carried = false; ; carried = true) {
      const range = await this.options.counter.reserve(entity.key, period, want, scheme.capacity);
      const full = !range || range.last >= scheme.capacity;
      const numbers = range ? formatRange(scheme, entity, period, range) : [];
      const result = await this.push(entity, slot, period, numbers, range, full);
      if (result !== 'fenced' || carried) return;
      // Refused below the fence: the database went back (a restore). Carry the counter past the fence, once.
      const fence = await this.options.store.fence(entity.key, period.id);
      if (fence === undefined) return;
      this.options.log.error(
        { entity: entity.key, period: period.id, fence: fence.toString() },
        'database_behind: the business-number counter is below what Redis already pushed (a restored database); carried past it',
      );
      await this.options.counter.raise(entity.key, period, fence);
    }
  }

  private async push(
    entity: EntityConfig,
    slot: 0 | 1,
    period: Period,
    numbers: readonly string[],
    range: SeqRange | undefined,
    full: boolean,
  ): Promise<'ok' | 'fenced' | 'epoch_changed' | 'slot_busy'> {
    if (numbers.length === 0 || !range)
      return this.options.store.push(entity.key, slot, period, [], undefined, undefined, full);
    for (let at = 0; at < numbers.length; at += NUMBERS_PER_PUSH) {
      const chunk = numbers.slice(at, at + NUMBERS_PER_PUSH);
      const lowest = range.first + BigInt(at);
      const highest = lowest + BigInt(chunk.length - 1);
      const last = at + NUMBERS_PER_PUSH >= numbers.length;
      const result = await this.options.store.push(entity.key, slot, period, chunk, lowest, highest, full && last);
      if (result !== 'ok') return result;
    }
    return 'ok';
  }
}

/** The slot that holds `period`, else one whose period is over by the Redis clock (or empty); undefined when both hold live periods. */
function slotFor(state: NumberState, period: Period): 0 | 1 | undefined {
  const [a, b] = state.slots;
  if (a.period === period.id) return 0;
  if (b.period === period.id) return 1;
  if (a.period === undefined || a.end <= state.now) return 0;
  if (b.period === undefined || b.end <= state.now) return 1;
  return undefined;
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
}
