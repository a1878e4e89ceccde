/**
 * The numbers layer without Redis (docs/numbers.md), for the embedded
 * service and the library: the injected clock decides the period; now's
 * period's numbers wait in the entity's in-process pool and go at its end
 * (as Redis expires the list); the next period's first step waits here.
 */
import type { Period } from '../numbers/period';
import type { NumberScheme } from '../numbers/scheme';
import type { MemoryPoolStore } from './memory-pool-store';
import { numberRun } from './number-takes';
import type { PoolSizing } from './demand';
import { LOCAL_PREFILL_LEAD_MS, type NumberEntity, PeriodLayer, type PeriodLayerOptions } from './period-pools';

/** The counter is behind the high-water file (embedded service). */
export interface MemoryNumberPeriodsOptions extends PeriodLayerOptions {
  /** The in-process pools: now's period's numbers wait in the entity's pool. */
  store: Pick<MemoryPoolStore, 'size' | 'pushPeriod' | 'periodReady' | 'keepInPeriod'>;
}

/** One period's numbers as this layer holds them: live ones in the store, the next period's here until its start. */
interface Slot {
  readonly period: Period;
  full: boolean;
  /** The next period's numbers, reserved ahead (the live slot's wait in the store). */
  readonly numbers: string[];
}

/** Business-number pools in process: the period by the injected clock, each filled from its SQL counter. */
export class MemoryNumberPeriods extends PeriodLayer {
  private readonly live = new Map<string, Slot>();
  private readonly staged = new Map<string, Slot>();

  constructor(private readonly options: MemoryNumberPeriodsOptions) {
    super(options, LOCAL_PREFILL_LEAD_MS);
  }

  /** The live slot of now's period, the staged one made live first once the clock is in it. */
  private liveAt(entityKey: string, now: number): Slot | undefined {
    const staged = this.staged.get(entityKey);
    if (staged && staged.period.start <= now) {
      this.staged.delete(entityKey);
      if (now < staged.period.end) {
        this.options.store.pushPeriod(entityKey, staged.numbers.splice(0), staged.period.end);
        this.live.set(entityKey, staged);
      }
    }
    const live = this.live.get(entityKey);
    return live && live.period.start <= now && now < live.period.end ? live : undefined;
  }

  async afterShort(entity: NumberEntity, count: number): Promise<boolean> {
    const now = this.options.clock.now();
    const live = this.liveAt(entity.key, now);
    if (!live) return false;
    const size = await this.options.store.size(entity.key);
    const slot = { period: live.period.id, end: live.period.end, full: live.full, size };
    return this.readyOrSpent(entity, slot, now, count);
  }

  async fill(entity: NumberEntity, need: number, sizing: PoolSizing): Promise<void> {
    const scheme = this.schemes.of(entity);
    const now = this.options.clock.now();
    const { current, ahead, dueIn } = this.periodsAt(scheme, now);
    let live = this.liveAt(entity.key, now);
    if (live?.period.id !== current.id) {
      live = { period: current, full: false, numbers: [] };
      this.live.set(entity.key, live);
    }
    if (!live.full) {
      const size = await this.options.store.size(entity.key);
      const want = this.fillWant(entity, size > 0, size, need, sizing);
      if (want > 0)
        this.options.store.pushPeriod(entity.key, await this.reserve(entity, scheme, live, want), current.end);
    }
    // The next period's first step, ahead of its boundary: the first take after it reserves nothing.
    if (ahead && this.staged.get(entity.key)?.period.id !== ahead.id) {
      const staged: Slot = { period: ahead, full: false, numbers: [] };
      staged.numbers.push(...(await this.reserve(entity, scheme, staged, Math.min(entity.step, this.cap(entity)))));
      this.staged.set(entity.key, staged);
    }
    this.dueAt.set(entity.key, this.options.clock.monotonic() + dueIn);
    await this.pruneOld(entity.key);
  }

  /** `want` numbers of the slot's period from its counter, formatted; the slot marked full at the capacity. */
  private async reserve(entity: NumberEntity, scheme: NumberScheme, slot: Slot, want: number): Promise<string[]> {
    const range = await this.options.counter.reserve(entity.key, slot.period, want, scheme.capacity);
    if (!range || range.last >= scheme.capacity) slot.full = true;
    return range ? (numberRun(scheme, entity, slot.period, range, true) as string[]) : [];
  }

  /** What waits of `period`: in the pool when it is live, here when it is the next, staged. */
  private aheadOf(entityKey: string, period: Period): string[] {
    const staged = this.staged.get(entityKey);
    return staged?.period.id === period.id ? staged.numbers : [];
  }

  /** Every reservation is in the pool or here at once: the counter is what may have been handed out. */
  protected async waitingOf(entity: NumberEntity, period: Period): Promise<{ waiting: string[]; issued: bigint }> {
    const waiting = [...this.options.store.periodReady(entity.key, period.end), ...this.aheadOf(entity.key, period)];
    return { waiting, issued: await this.options.counter.peek(entity.key, period.id) };
  }

  protected async dropUpTo(entity: NumberEntity, period: Period, upTo: string): Promise<void> {
    const { store } = this.options;
    const above = (n: string) => n > upTo;
    store.keepInPeriod(entity.key, period.end, store.periodReady(entity.key, period.end).filter(above));
    const ahead = this.aheadOf(entity.key, period);
    ahead.splice(0, ahead.length, ...ahead.filter(above));
  }

  /** Now's period by the injected clock: its counter less what waits in process. */
  protected async used(entity: NumberEntity, scheme: NumberScheme) {
    const now = this.options.clock.now();
    const period = scheme.calendar.at(now);
    const ready = this.liveAt(entity.key, now)?.period.id === period.id ? await this.options.store.size(entity.key) : 0;
    return { now, period, reserved: await this.options.counter.peek(entity.key, period.id), ready };
  }

  /** Forgets a retired entity. */
  override forget(entityKey: string): void {
    super.forget(entityKey);
    this.live.delete(entityKey);
    this.staged.delete(entityKey);
  }
}
