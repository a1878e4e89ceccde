import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import { ConflictError, PeriodExhaustedError, PeriodShortError, UnavailableError, errorMessage } from '../errors';
import type { Period } from '../numbers/period';
import { NumberScheme, type NumberSettings } from '../numbers/scheme';
import type { Logger } from '../logger';
import { NUMBER_PERIOD_RETENTION_MS, type NumberCounter } from '../segment/number-counter';
import type { PoolSizing } from './demand';
import type { NumberAdmin, NumberUsage } from './number-takes';
import type { HeldLock, RefillLock } from './pool-store';

/**
 * In process a reservation is one statement on a near database, so the lead
 * only takes it off the first take after the boundary; a process stopping
 * within it loses that step (a gap), so it is short (Redis fills a minute
 * ahead: its numbers outlive any one instance).
 */
export const LOCAL_PREFILL_LEAD_MS = 5_000;

/** What a business-number take needs of an entity (an `EntityConfig`; the library builds one from its `application` row). */
export interface NumberEntity {
  readonly key: string;
  readonly mode: 'monotonic' | 'trend' | 'snowflake';
  readonly step: number;
  /** The largest take (`maxSizePerTimes`; the library's takes have none: 0). */
  readonly maxSizePerTimes: number;
  readonly numbers?: NumberSettings;
}

/** The scheme of an entity's settings, built once per settings (they never change once registered). */
class NumberSchemes {
  private readonly cache = new Map<string, NumberScheme>();
  /** The same settings object again (a take's entity): found without building the key. */
  private readonly bySettings = new WeakMap<NumberSettings, NumberScheme>();

  of(entity: Pick<NumberEntity, 'key' | 'numbers'>): NumberScheme {
    const settings = entity.numbers;
    if (!settings) throw new Error(`entity ${entity.key} has no business-number format`);
    let scheme = this.bySettings.get(settings);
    if (scheme) return scheme;
    const id = `${settings.format}\n${settings.reset}\n${settings.timeZone}`;
    scheme = this.cache.get(id) ?? NumberScheme.of(settings);
    this.cache.set(id, scheme);
    this.bySettings.set(settings, scheme);
    return scheme;
  }
}

/** A period's pool as a take that ran short finds it; `full`: its counter is at its capacity, nothing more comes. */
export interface LivePeriod {
  readonly period: string;
  readonly end: number;
  readonly full: boolean;
  readonly size: number;
}

/** What both numbers layers are built with (`number-periods.ts` on Redis, `memory-number-periods.ts` in process). */
export interface PeriodLayerOptions {
  /** The period counters in SQL (embedded: behind the high-water file, `HighWaterNumberCounter`). */
  counter: NumberCounter;
  /** The entity's refill lock, which a raise takes (the refiller holds it around a fill). */
  lock: RefillLock;
  /** `DispatchEvents.periodExhausted` (not imported: the dispatcher imports this file). */
  events: { periodExhausted(entityKey: string, digits: number, nextAt: number): void };
  clock: Clock;
  log: Logger;
  /** How soon an entity found due is due again if no fill ran meanwhile (its lock held elsewhere, Redis down): the refill tick. */
  retryMs: number;
  /** How long before a boundary the next period is filled: a minute on Redis, so the first take after it is served from Redis however slow the database; {@link LOCAL_PREFILL_LEAD_MS} in process. */
  prefillLeadMs?: number;
}

/** What the refiller and the dispatcher ask of a business-number entity, whose pool is kept per period. */
export interface PeriodPools {
  /** Most numbers of one period kept ready: the cap on the pool's demand sizing (`NumberScheme.poolCap`). */
  cap(entity: EntityConfig): number;
  /** Fills now's period (and the next, ahead of its boundary) towards `sizing`, at least `need` of now's; the caller holds the entity's refill lock. */
  fill(entity: EntityConfig, need: number, sizing: PoolSizing): Promise<void>;
  /** After a short take: true when `count` are ready now; throws the period's refusal; false when a refill is what it needs. */
  afterShort(entity: EntityConfig, count: number): Promise<boolean>;
  /** Of `keys`, those due a refill now whatever their level (a boundary, the next period's lead, a fence check), and the ms until the next such moment. */
  due(keys: readonly string[]): { keys: string[]; waitMs: number };
}

/** Old periods' counters are pruned this often. */
const PRUNE_EVERY_MS = 3600_000;

/** How long a raise waits for the entity's refill lock: a fill holds it for one reservation (and push). */
const RAISE_LOCK_WAIT_MS = 2000;

/** What the two numbers layers (and so the library's) share; old periods are pruned hourly at a fill, with no timer. */
export abstract class PeriodLayer implements PeriodPools, NumberAdmin {
  readonly schemes = new NumberSchemes();
  /** When (monotonic) each entity is next due a fill whatever its level: a boundary, the next period's lead, a fence check. */
  protected readonly dueAt = new Map<string, number>();
  /** When (Unix ms) each pruning last ran: the counters' rows once for all (`*`), or an entity's own. */
  private readonly prunedAt = new Map<string, number>();
  private readonly leadMs: number;

  constructor(
    private readonly layer: PeriodLayerOptions,
    defaultLeadMs: number,
  ) {
    this.leadMs = layer.prefillLeadMs ?? defaultLeadMs;
  }

  abstract fill(entity: NumberEntity, need: number, sizing: PoolSizing): Promise<void>;
  abstract afterShort(entity: NumberEntity, count: number): Promise<boolean>;
  /** The numbers of `period` still waiting, in take order, and the highest sequence of it that may have been handed out. */
  protected abstract waitingOf(entity: EntityConfig, period: Period): Promise<{ waiting: string[]; issued: bigint }>;
  /** Drops the waiting numbers of `period` up to `upTo` (sequence `seq`, formatted), keeping those above in order. */
  protected abstract dropUpTo(entity: EntityConfig, period: Period, upTo: string, seq: bigint): Promise<void>;
  /** Now by the clock that decides the period, now's period, its sequences gone from the counter and those ready. */
  protected abstract used(
    entity: NumberEntity,
    scheme: NumberScheme,
  ): Promise<{ now: number; period: Period; reserved: bigint; ready: number }>;

  cap(entity: NumberEntity): number {
    return this.schemes.of(entity).poolCap(entity.maxSizePerTimes);
  }

  due(keys: readonly string[]): { keys: string[]; waitMs: number } {
    const now = this.layer.clock.monotonic();
    const due: string[] = [];
    let next = Infinity;
    for (const key of keys) {
      let at = this.dueAt.get(key) ?? now;
      if (at <= now) {
        due.push(key);
        // Due again after a tick unless a fill says otherwise (a lock held elsewhere ends a refill before it).
        this.dueAt.set(key, (at = now + this.layer.retryMs));
      }
      next = Math.min(next, at);
    }
    return { keys: due, waitMs: Math.max(0, next - now) };
  }

  /**
   * Starts period `periodId` after `seq`, under the entity's refill lock (no
   * fill in flight; asked again for {@link RAISE_LOCK_WAIT_MS}, then 503):
   * 409 when the period's line is already past it; otherwise its counter
   * moves up to `seq` and the numbers at or below it still waiting are
   * dropped, those above kept, so the next number is seq + 1. Resolves to
   * the sequence the next number follows.
   */
  async raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint> {
    const { clock, lock, counter } = this.layer;
    const scheme = this.schemes.of(entity);
    const period = this.named(entity, periodId);
    const capped = seq > scheme.capacity ? scheme.capacity : seq;
    const deadline = clock.monotonic() + RAISE_LOCK_WAIT_MS;
    let held: HeldLock | null;
    while (!(held = await lock.acquire(entity.key))) {
      if (clock.monotonic() > deadline)
        throw new UnavailableError(`${entity.key}: a refill holds the entity's lock; retry shortly`, 1);
      await clock.sleep(25);
    }
    try {
      const { waiting, issued } = await this.waitingOf(entity, period);
      // The line: one above the highest sequence reserved that is not still waiting (handed out, or dropped as a gap).
      const ready = new Set(waiting.map((n) => scheme.template.decode(n)?.seq));
      let line = issued;
      while (line > 0n && ready.has(line)) line--;
      if (capped <= line)
        throw new ConflictError(
          `period ${period.id} of "${entity.key}" is already past seq ${capped}: the next number is ${scheme.template.formatter(period)(line + 1n)}; nothing changed`,
        );
      const after = await counter.raise(entity.key, period, capped);
      await this.dropUpTo(entity, period, scheme.template.formatter(period)(capped), capped);
      // The next number follows: the lowest still waiting above the raise, else the counter.
      let next = after + 1n;
      for (const n of ready) if (n !== undefined && n > capped && n < next) next = n;
      return next - 1n;
    } finally {
      await held.release().catch(() => undefined);
    }
  }

  /** Now's period and how much of it is gone (dropped leftovers and gaps count as used: they are gone too). */
  async usage(entity: NumberEntity): Promise<NumberUsage> {
    const scheme = this.schemes.of(entity);
    const { now, period, reserved, ready } = await this.used(entity, scheme);
    const used = reserved - BigInt(ready);
    const { capacity, template, settings } = scheme;
    return {
      now,
      period,
      used: used > 0n ? used : 0n,
      ready,
      capacity,
      digits: template.seqWidth,
      timeZone: settings.timeZone,
    };
  }

  /**
   * How many a fill reserves when the pool holds `size`: none while it holds
   * the low watermark and what a take waits for; else whole steps (a trend
   * entity shuffles within them) up to the target, past `max` only for a take.
   */
  protected fillWant(
    entity: Pick<EntityConfig, 'step'>,
    held: boolean,
    size: number,
    need: number,
    { target, lowWatermark, max }: PoolSizing,
  ): number {
    if (held && size >= Math.max(need, lowWatermark)) return 0;
    const stepped = Math.max(entity.step, Math.ceil((Math.max(need, target) - size) / entity.step) * entity.step);
    return Math.max(need - size, Math.min(stepped, max - size));
  }

  /** The period named `periodId` of the entity's calendar, or a 400-worthy complaint. */
  protected named(entity: NumberEntity, periodId: string): Period {
    const scheme = this.schemes.of(entity);
    const period = scheme.calendar.named(periodId);
    if (!period)
      throw new RangeError(
        `"${periodId}" is no ${scheme.template.reset} period of ${entity.key} (${scheme.settings.timeZone}); periods are named like ${scheme.calendar.at(this.layer.clock.now()).id}`,
      );
    return period;
  }

  /** {@link PeriodPools.afterShort} on the live period: a spent one refused (`period_short` with what remains, else `period_exhausted`). */
  protected readyOrSpent(entity: NumberEntity, live: LivePeriod, now: number, count: number): boolean {
    if (live.size >= count) return true;
    if (live.full && live.size > 0) throw new PeriodShortError(entity.key, live.period, count, live.size);
    if (!live.full) return false;
    const scheme = this.schemes.of(entity);
    this.layer.events.periodExhausted(entity.key, scheme.template.seqWidth, live.end);
    const seconds = Math.max(1, Math.ceil((live.end - now) / 1000));
    throw new PeriodExhaustedError(
      `${entity.key}: period ${live.period} has handed out all ${scheme.capacity} numbers of ${scheme.template.seqWidth} digits; the next period starts in ${seconds} s`,
      seconds,
    );
  }

  /** Now's period, the next once its lead began, and the ms until the entity is due again: just after the boundary, or at the lead. */
  periodsAt(scheme: NumberScheme, now: number): { current: Period; ahead?: Period; dueIn: number } {
    const current = scheme.calendar.at(now);
    const next = scheme.calendar.after(current);
    const leadStart = next ? next.start - this.leadMs : Infinity;
    const dueIn = Math.min(current.end - now + 1, now < leadStart ? leadStart - now : Infinity);
    return { current, ahead: now >= leadStart ? next : undefined, dueIn };
  }

  /** Hourly, a failure logged: old periods' counters after the retention, and `more` of them (Redis: this entity's fences). */
  protected async pruneOld(entityKey: string, more?: (before: number) => Promise<unknown>): Promise<void> {
    const before = this.layer.clock.now() - NUMBER_PERIOD_RETENTION_MS;
    await this.pruneHourly('*', async () => this.layer.counter.prune?.(before));
    if (more) await this.pruneHourly(entityKey, () => more(before));
  }

  private async pruneHourly(key: string, prune: () => Promise<unknown>): Promise<void> {
    const now = this.layer.clock.now();
    if (now - (this.prunedAt.get(key) ?? 0) < PRUNE_EVERY_MS) return;
    this.prunedAt.set(key, now);
    try {
      await prune();
    } catch (err) {
      this.layer.log.warn({ entity: key, err: errorMessage(err) }, 'pruning business-number periods failed');
    }
  }

  /** Forgets a retired entity. */
  forget(entityKey: string): void {
    this.dueAt.delete(entityKey);
    this.prunedAt.delete(entityKey);
  }
}
