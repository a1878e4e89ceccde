/**
 * Business numbers without Redis (embedded service, library): the injected clock decides the period; now's
 * numbers wait in the in-process pool and go at its end; the next period's first step waits here.
 */
import type { Clock } from '../clock';
import type { Period } from '../numbers/period';
import type { NumberScheme } from '../numbers/scheme';
import type { NumberCounter, SeqRange } from '../segment/number-counter';
import type { MemoryPoolStore } from './memory-pool-store';
import { type NumberEntity, type PeriodSlot, type PeriodState, type PeriodStore, numberRun } from './period-pools';

interface Slot {
  readonly period: Period;
  readonly full: boolean;
  /** A staged period's numbers (the live slot's wait in the pool). */
  readonly numbers: string[];
}

const NO_SLOT: PeriodSlot = { period: undefined, start: 0, end: 0, full: false, size: 0 };

/** The period by the injected clock: no epoch, no fence, no other process's clock to stay behind. */
export class MemoryNumberStore implements PeriodStore {
  readonly inProcess = true;
  private readonly live = new Map<string, Slot>();
  private readonly staged = new Map<string, Slot>();

  constructor(
    private readonly pool: Pick<MemoryPoolStore, 'size' | 'pushPeriod' | 'periodReady' | 'keepInPeriod'>,
    private readonly counter: Pick<NumberCounter, 'peek'>,
    private readonly clock: Clock,
  ) {}

  async state(entityKey: string): Promise<PeriodState> {
    const now = this.clock.now();
    const live = this.liveAt(entityKey, now);
    const size = live ? await this.pool.size(entityKey) : 0;
    const staged = this.staged.get(entityKey);
    // A live period with none ready and more to come is not held: a fill reserves for it whatever the low watermark.
    const held = live && (size > 0 || live.full) ? slotOf(live, size) : NO_SLOT;
    const slots = [held, staged ? slotOf(staged, staged.numbers.length) : NO_SLOT] as const;
    return { now, epochCurrent: true, slots, latest: -Infinity, dropped: false };
  }

  async pushRange(
    entity: NumberEntity,
    scheme: NumberScheme,
    period: Period,
    range: SeqRange | undefined,
    full: boolean,
  ): Promise<'ok'> {
    const numbers = range ? (numberRun(scheme, entity, period, range, true) as string[]) : [];
    if (period.start > this.clock.now()) {
      // A second push for the same staged period adds to it: replacing it would drop reserved numbers (a gap).
      this.staged.set(entity.key, { period, full, numbers: [...this.stagedOf(entity.key, period), ...numbers] });
    } else {
      this.live.set(entity.key, { period, full, numbers: [] });
      this.pool.pushPeriod(entity.key, numbers, period.end);
    }
    return 'ok';
  }

  /** In the pool when it is live, here when it is the next, staged. */
  async waiting(entityKey: string, period: Period): Promise<string[]> {
    return [...this.pool.periodReady(entityKey, period.end), ...this.stagedOf(entityKey, period)];
  }

  /** Every reservation is in the pool or here at once: the counter is what may have been handed out. */
  issued(entityKey: string, periodId: string): Promise<bigint> {
    return this.counter.peek(entityKey, periodId);
  }

  async trim(entityKey: string, period: Period, upTo: string): Promise<void> {
    const above = (n: string) => n > upTo;
    this.pool.keepInPeriod(entityKey, period.end, this.pool.periodReady(entityKey, period.end).filter(above));
    const staged = this.stagedOf(entityKey, period);
    staged.splice(0, staged.length, ...staged.filter(above));
  }

  forget(entityKey: string): void {
    this.live.delete(entityKey);
    this.staged.delete(entityKey);
  }

  /** The live slot of now's period, the staged one made live first once the clock is in it. */
  private liveAt(entityKey: string, now: number): Slot | undefined {
    const staged = this.staged.get(entityKey);
    if (staged && staged.period.start <= now) {
      this.staged.delete(entityKey);
      if (now < staged.period.end) {
        this.pool.pushPeriod(entityKey, staged.numbers.splice(0), staged.period.end);
        this.live.set(entityKey, staged);
      }
    }
    const live = this.live.get(entityKey);
    return live && live.period.start <= now && now < live.period.end ? live : undefined;
  }

  private stagedOf(entityKey: string, period: Period): string[] {
    const staged = this.staged.get(entityKey);
    return staged?.period.id === period.id ? staged.numbers : [];
  }
}

function slotOf({ period, full }: Slot, size: number): PeriodSlot {
  return { period: period.id, start: period.start, end: period.end, full, size };
}
