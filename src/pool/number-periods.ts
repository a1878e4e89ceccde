/**
 * The numbers layer on Redis (docs/numbers.md): the Redis server's clock
 * decides the period; the `ids` list of now's period expires at its end and
 * the number functions make the next period, staged ahead, live by `TIME`.
 */
import type { EntityConfig } from '../entities/entity';
import { UnavailableError } from '../errors';
import type { Period } from '../numbers/period';
import type { NumberScheme } from '../numbers/scheme';
import type { DatabaseBehindReport } from '../segment/high-water';
import type { NumberState, RedisNumberStore } from './number-store';
import { numberRun } from './number-takes';
import type { PoolSizing } from './demand';
import { PeriodLayer, type PeriodLayerOptions } from './period-pools';
import { pushInCalls } from './segment-push';

export interface RedisNumberPeriodsOptions extends PeriodLayerOptions {
  store: RedisNumberStore;
  /** How often each entity's periods are checked against their fences (IDPOOL_FENCE_CHECK_MS; 0: only at a refused push). */
  fenceCheckMs?: number;
  /** A period's counter was found behind its fence (a restored database) and carried past it. */
  databaseBehind?(report: DatabaseBehindReport): void;
}

/** Business-number pools on Redis: the period by the Redis clock, each period's pool filled from its SQL counter. */
export class RedisNumberPeriods extends PeriodLayer {
  /** When (monotonic) each entity's periods were last checked against their fences. */
  private readonly fencesCheckedAt = new Map<string, number>();

  constructor(private readonly options: RedisNumberPeriodsOptions) {
    super(options, 60_000);
  }

  async afterShort(entity: EntityConfig, count: number): Promise<boolean> {
    const scheme = this.schemes.of(entity);
    const state = await this.options.store.state(entity.key);
    if (!state.epochCurrent) return false;
    const [live] = state.slots;
    if (live.period !== undefined && live.start <= state.now && state.now < live.end)
      return this.readyOrSpent(entity, { ...live, period: live.period }, state.now, count);
    if (scheme.calendar.at(state.now).start < state.latest)
      throw new UnavailableError(
        `${entity.key}: the Redis clock is behind a period already handed out (a failover to a server whose clock is behind); retry shortly`,
      );
    return false;
  }

  async fill(entity: EntityConfig, need: number, sizing: PoolSizing): Promise<void> {
    const scheme = this.schemes.of(entity);
    let state = await this.options.store.state(entity.key);
    if (!state.epochCurrent) state = await this.resetEpoch(entity, scheme, state);
    // Periods by the Redis clock: the one the takes will ask for.
    const { current, ahead, dueIn } = this.periodsAt(scheme, state.now);
    const mono = this.options.clock.monotonic();
    await this.fillPeriod(entity, scheme, state, current, need, sizing);
    if (ahead) await this.fillPeriod(entity, scheme, state, ahead, 0, sizing);
    // Due again at the boundary or the lead (`periodsAt`), or a fence check.
    this.dueAt.set(entity.key, Math.min(mono + dueIn, await this.carryBehind(entity, state)));
    await this.pruneOld(entity.key, (before) =>
      this.options.store.pruneFences(entity.key, scheme.calendar.at(before).id),
    );
  }

  /**
   * Every `fenceCheckMs`: a live or staged period whose counter is below its
   * fence (a restored database) is carried past it now, not at its next
   * reservation, which a full list can put off for the whole period (the
   * fence the only record meanwhile). Resolves to the next check (monotonic).
   */
  private async carryBehind(entity: EntityConfig, state: NumberState): Promise<number> {
    const every = this.options.fenceCheckMs ?? 0;
    const now = this.options.clock.monotonic();
    if (every <= 0) return Infinity;
    const last = this.fencesCheckedAt.get(entity.key) ?? -Infinity;
    if (now - last < every) return last + every;
    this.fencesCheckedAt.set(entity.key, now);
    for (const { period } of state.slots) if (period !== undefined) await this.carry(entity, period);
    return now + every;
  }

  /** The counter (`seen`, else read) below the fence carried past it, logged and reported; the fence read first (only committed ranges raise it). */
  private async carry(entity: EntityConfig, periodId: string, seen?: bigint): Promise<void> {
    const fence = await this.options.store.fence(entity.key, periodId);
    if (fence === undefined) return;
    const counter = seen ?? (await this.options.counter.peek(entity.key, periodId));
    if (counter >= fence) return;
    const period = this.named(entity, periodId);
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

  /** Lists of another epoch may hold numbers handed out: dropped, the fences of now's period and the next raised to the counters. */
  private async resetEpoch(entity: EntityConfig, scheme: NumberScheme, state: NumberState): Promise<NumberState> {
    const current = scheme.calendar.at(state.now);
    const periods = [current, scheme.calendar.after(current)].filter((p): p is Period => p !== undefined);
    const fences = await Promise.all(
      periods.map(async (p) => [p.id, await this.options.counter.peek(entity.key, p.id)] as const),
    );
    const after = await this.options.store.state(entity.key, fences);
    if (after.dropped)
      this.options.log.warn({ entity: entity.key }, 'business numbers filled in another Redis epoch dropped');
    return after;
  }

  private async fillPeriod(
    entity: EntityConfig,
    scheme: NumberScheme,
    state: NumberState,
    period: Period,
    need: number,
    sizing: PoolSizing,
  ): Promise<void> {
    const { store, counter } = this.options;
    // The list holding the period now (live or staged; the push picks which by the Redis clock).
    const held = state.slots.find((slot) => slot.period === period.id);
    if (held?.full) return;
    const want = this.fillWant(entity, held !== undefined, held?.size ?? 0, need, sizing);
    if (want <= 0) return;
    for (let carried = false; ; carried = true) {
      const range = await counter.reserve(entity.key, period, want, scheme.capacity);
      const full = !range || range.last >= scheme.capacity;
      // In calls as a segment's: a trend entity's calls hold whole steps, so each call's lowest and highest bound it (the fence).
      const result = !range
        ? await store.push(entity.key, period, [], undefined, undefined, full)
        : await pushInCalls(entity, range.first, range.last, (first, last) => {
            const run = numberRun(scheme, entity, period, { first, last });
            return store.push(entity.key, period, run, first, last, full && last === range.last);
          });
      if (result !== 'fenced' || carried) return;
      // Refused below the fence: the database went back (a restore). Carry the counter past the fence, once.
      await this.carry(entity, period.id, range ? range.first - 1n : scheme.capacity);
    }
  }

  /** Handed out is at most what was pushed (the fence): a reservation never pushed was never taken. */
  protected async waitingOf(entity: EntityConfig, period: Period): Promise<{ waiting: string[]; issued: bigint }> {
    const waiting = await this.options.store.waiting(entity.key, period.id);
    return { waiting, issued: (await this.options.store.fence(entity.key, period.id)) ?? 0n };
  }

  protected async dropUpTo(entity: EntityConfig, period: Period, upTo: string, seq: bigint): Promise<void> {
    await this.options.store.trim(entity.key, period.id, upTo, seq);
  }

  /** Now's period by the Redis clock: its fence (the highest sequence pushed) less what its slot still holds. */
  protected async used(entity: EntityConfig, scheme: NumberScheme) {
    const { now, slots, fences } = await this.options.store.state(entity.key);
    const period = scheme.calendar.at(now);
    const ready = slots.find((s) => s.period === period.id)?.size ?? 0;
    return { now, period, reserved: fences.get(period.id) ?? 0n, ready };
  }

  /** Forgets a retired entity. */
  override forget(entityKey: string): void {
    super.forget(entityKey);
    this.fencesCheckedAt.delete(entityKey);
  }
}
