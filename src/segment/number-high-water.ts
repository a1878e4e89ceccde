/**
 * The period counters behind the high-water record (as {@link HighWaterAllocator} for `current_offset`): a counter
 * at or below the record (a restored file, a database failed back) is carried past it first, and reported.
 */
import type { DatabaseBehindReport, HighWaterRecord } from './high-water';
import type { CounterPeriod, NumberCounter, SeqRange } from './number-counter';

/** A period counter's record key (a space never occurs in an entity key); its end says when it may go. */
function numberMark(entityKey: string, period: CounterPeriod): string {
  return `${entityKey} ${period.id} ${period.end}`;
}

function markEndedBefore(key: string, before: number): boolean {
  const parts = key.split(' ');
  return parts.length === 3 && Number(parts[2]) < before;
}

export class HighWaterNumberCounter implements NumberCounter {
  constructor(
    private readonly inner: NumberCounter,
    private readonly record: HighWaterRecord,
    private readonly onBehind: (report: DatabaseBehindReport) => void,
  ) {}

  async reserve(key: string, period: CounterPeriod, size: number, capacity: bigint): Promise<SeqRange | undefined> {
    const mark = numberMark(key, period);
    let range = await this.inner.reserve(key, period, size, capacity);
    const recorded = this.record.get(mark);
    if (range && recorded !== undefined && range.first <= recorded) {
      // That range may repeat numbers already handed out: wasted. The counter goes past the record, then the reservation again.
      const databaseOffset = range.first - 1n;
      await this.inner.raise(key, period, recorded);
      range = await this.inner.reserve(key, period, size, capacity);
      this.onBehind({
        entityKey: key,
        period: period.id,
        databaseOffset,
        record: this.record.kind,
        recordedOffset: recorded,
        carriedTo: range?.last ?? recorded,
      });
    }
    if (range) await this.record.raise(mark, range.last);
    return range;
  }

  peek(entityKey: string, periodId: string): Promise<bigint> {
    return this.inner.peek(entityKey, periodId);
  }

  async raise(entityKey: string, period: CounterPeriod, atLeast: bigint): Promise<bigint> {
    const after = await this.inner.raise(entityKey, period, atLeast);
    await this.record.raise(numberMark(entityKey, period), after);
    return after;
  }

  /** Prunes the rows and the record's marks of periods that ended before `before`. */
  async prune(before: number): Promise<number> {
    await this.record.forget?.((key) => markEndedBefore(key, before));
    return (await this.inner.prune?.(before)) ?? 0;
  }
}
