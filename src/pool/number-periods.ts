/**
 * The numbers layer of the one engine (docs/numbers.md): what the refiller
 * and the dispatcher ask of a business-number entity's pool on Redis
 * ({@link PeriodPools}), and its raise and usage. The Redis server's clock
 * decides the period: the `ids` list holding now's period's numbers expires
 * at its end, and the number functions read `TIME` to make the next period,
 * staged ahead of its boundary, live. The refiller's tick, lock, demand
 * sizing and failure marks drive {@link RedisNumberPeriods.fill}; the
 * dispatcher's take loop asks {@link RedisNumberPeriods.afterShort} why a
 * take ran short.
 */
import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import { PeriodShortError, UnavailableError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import type { Period } from '../numbers/period';
import type { NumberScheme } from '../numbers/scheme';
import type { DatabaseBehindReport } from '../segment/high-water';
import { NumberSchemes, namedPeriod, periodFull, periodLine, raiseBelowLine } from '../segment/local-numbers';
import { NUMBER_PERIOD_RETENTION_MS, type SeqRange } from '../segment/number-counter';
import type { PrunableCounter } from '../segment/number-high-water';
import type { DispatchEvents } from './dispatcher';
import type { NumberPushResult, NumberState, RedisNumberStore } from './number-store';
import { type NumberAdmin, type NumberUsage, numberRun, usageOf } from './number-takes';
import type { PeriodPools, PoolSizing } from './period-pools';
import type { RefillLock } from './pool-store';
import { pushInCalls } from './segment-push';

/** How long a raise waits for the entity's refill lock: a refill holds it for one reservation and push. */
const RAISE_LOCK_WAIT_MS = 2000;

/** Old periods' counters and fences are pruned this often. */
const PRUNE_EVERY_MS = 3600_000;

export interface RedisNumberPeriodsOptions {
  store: RedisNumberStore;
  counter: PrunableCounter;
  /** The entity's refill lock, which a raise takes (the refiller holds it around {@link RedisNumberPeriods.fill}). */
  lock: RefillLock;
  events: Pick<DispatchEvents, 'periodExhausted'>;
  clock: Clock;
  log: Logger;
  /** How soon an entity found due is due again if no fill ran meanwhile (its lock held elsewhere, Redis down): the refill tick. */
  retryMs: number;
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

/** Business-number pools on Redis: the period by the Redis clock, each period's pool filled from its SQL counter. */
export class RedisNumberPeriods implements PeriodPools, NumberAdmin {
  private readonly schemes = new NumberSchemes();
  /** When (monotonic) each entity is next due a fill whatever its level: a boundary, the next period's lead, a fence check. */
  private readonly dueAt = new Map<string, number>();
  /** When (monotonic) each entity's periods were last compared with their fences. */
  private readonly fencesCheckedAt = new Map<string, number>();
  /** When (Unix ms) old periods were last pruned, per entity (the counters' rows once for all, under `*`). */
  private readonly prunedAt = new Map<string, number>();

  constructor(private readonly options: RedisNumberPeriodsOptions) {}

  cap(entity: EntityConfig): number {
    return this.schemes.of(entity).poolCap(entity.maxSizePerTimes);
  }

  due(keys: readonly string[]): { keys: string[]; waitMs: number } {
    const now = this.options.clock.monotonic();
    const due: string[] = [];
    let next = Infinity;
    for (const key of keys) {
      const at = this.dueAt.get(key) ?? now;
      if (at <= now) {
        due.push(key);
        // Due again after a tick unless a fill says otherwise (a lock held elsewhere ends a refill before it).
        this.dueAt.set(key, now + this.options.retryMs);
      }
      next = Math.min(next, at <= now ? now + this.options.retryMs : at);
    }
    return { keys: due, waitMs: Math.max(0, next - now) };
  }

  async afterShort(entity: EntityConfig, count: number): Promise<boolean> {
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

  async fill(entity: EntityConfig, need: number, sizing: PoolSizing): Promise<void> {
    const scheme = this.schemes.of(entity);
    let state = await this.options.store.state(entity.key);
    if (!state.epochCurrent) {
      await this.resetEpoch(entity, scheme, state);
      state = await this.options.store.state(entity.key);
    }
    // Periods by the Redis clock: the one the takes will ask for.
    const current = scheme.calendar.at(state.now);
    const next = scheme.calendar.after(current);
    const mono = this.options.clock.monotonic();
    const leadStart = next ? next.start - (this.options.prefillLeadMs ?? 60_000) : Infinity;
    await this.fillPeriod(entity, scheme, state, current, need, sizing);
    if (next && state.now >= leadStart) await this.fillPeriod(entity, scheme, state, next, 0, sizing);
    const fenceAt = await this.carryBehind(entity, scheme, state);
    // Due again just after the boundary (the next period goes live for direct pops), when the lead begins, or a fence check.
    const boundaryAt = mono + current.end - state.now + 1;
    const leadAt = state.now < leadStart ? mono + leadStart - state.now : Infinity;
    this.dueAt.set(entity.key, Math.min(boundaryAt, leadAt, fenceAt));
    await this.pruneHourly(entity, scheme);
  }

  /**
   * Every `fenceCheckMs`, under the refill lock: a live or staged period
   * whose counter is below its fence (a database restored from a backup) is
   * carried past it now, not at its next reservation, which a full list can
   * put off for as long as the period lasts; until then the fence is the
   * only record of the numbers issued since the backup. The fence is read
   * before the counter: it only rises by pushes of ranges already committed.
   * Resolves to when (monotonic) the next check is due.
   */
  private async carryBehind(entity: EntityConfig, scheme: NumberScheme, state: NumberState): Promise<number> {
    const every = this.options.fenceCheckMs ?? 0;
    const now = this.options.clock.monotonic();
    if (every <= 0) return Infinity;
    const last = this.fencesCheckedAt.get(entity.key) ?? -Infinity;
    if (now - last < every) return last + every;
    this.fencesCheckedAt.set(entity.key, now);
    for (const slot of state.slots) {
      if (slot.period === undefined) continue;
      const fence = await this.options.store.fence(entity.key, slot.period);
      if (fence === undefined) continue;
      const counter = await this.options.counter.peek(entity.key, slot.period);
      if (counter >= fence) continue;
      await this.carry(entity, namedPeriod(scheme, entity, slot.period, this.options.clock.now()), counter, fence);
    }
    return now + every;
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

  private async fillPeriod(
    entity: EntityConfig,
    scheme: NumberScheme,
    state: NumberState,
    period: Period,
    need: number,
    { target, lowWatermark, max }: PoolSizing,
  ): Promise<void> {
    // The list holding the period now (live or staged; the push picks which by the Redis clock).
    const held = state.slots.find((slot) => slot.period === period.id);
    const size = held?.size ?? 0;
    if (held?.full) return;
    if (held && size >= Math.max(need, lowWatermark)) return;
    // Whole steps up to the target (a trend entity shuffles within them), never past the cap unless a take waits for more.
    const stepped = Math.max(entity.step, Math.ceil((Math.max(need, target) - size) / entity.step) * entity.step);
    const want = Math.max(need - size, Math.min(stepped, max - size));
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
   * Pushes `range` of `period`, formatted, in calls as a segment's
   * ({@link pushInCalls}); a trend entity's calls hold whole steps, so
   * each call's lowest and highest sequence bound what it holds (the fence).
   */
  private push(
    entity: EntityConfig,
    scheme: NumberScheme,
    period: Period,
    range: SeqRange | undefined,
    full: boolean,
  ): Promise<NumberPushResult> {
    const { store } = this.options;
    if (!range) return store.push(entity.key, period, [], undefined, undefined, full);
    return pushInCalls(entity, range.first, range.last, (lowest, highest) =>
      store.push(
        entity.key,
        period,
        numberRun(scheme, entity, period, { first: lowest, last: highest }),
        lowest,
        highest,
        full && highest === range.last,
      ),
    );
  }

  /** Prunes the counters' rows of periods over for longer than the retention, and this entity's fences of them, hourly. */
  private async pruneHourly(entity: EntityConfig, scheme: NumberScheme): Promise<void> {
    const now = this.options.clock.now();
    const before = now - NUMBER_PERIOD_RETENTION_MS;
    try {
      if (now - (this.prunedAt.get('*') ?? 0) >= PRUNE_EVERY_MS) {
        this.prunedAt.set('*', now);
        await this.options.counter.prune?.(before);
      }
      if (now - (this.prunedAt.get(entity.key) ?? 0) >= PRUNE_EVERY_MS) {
        this.prunedAt.set(entity.key, now);
        await this.options.store.pruneFences(entity.key, scheme.calendar.at(before).id);
      }
    } catch (err) {
      this.options.log.warn({ entity: entity.key, err: errorMessage(err) }, 'pruning business-number periods failed');
    }
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

  /** Forgets a retired entity. */
  forget(entityKey: string): void {
    this.dueAt.delete(entityKey);
    this.fencesCheckedAt.delete(entityKey);
    this.prunedAt.delete(entityKey);
  }
}
