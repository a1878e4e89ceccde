import type { CounterPeriod, NumberCounter, SeqRange } from './number-counter';

/** The `number_period` counters in memory, reserved as `SqlNumberCounter` does (unit tests). */
export class FakeNumberCounter implements NumberCounter {
  /** `entityKey period` → the highest sequence reserved, with the period's end. */
  readonly rows = new Map<string, { seq: bigint; end: number }>();
  readonly reservations: { entityKey: string; period: string; first: bigint; last: bigint }[] = [];

  async reserve(key: string, period: CounterPeriod, size: number, capacity: bigint): Promise<SeqRange | undefined> {
    const row = this.row(key, period);
    if (row.seq >= capacity) return undefined;
    const last = row.seq + BigInt(size) > capacity ? capacity : row.seq + BigInt(size);
    const range = { first: row.seq + 1n, last };
    row.seq = last;
    this.reservations.push({ entityKey: key, period: period.id, ...range });
    return range;
  }

  async peek(entityKey: string, periodId: string): Promise<bigint> {
    return this.rows.get(`${entityKey} ${periodId}`)?.seq ?? 0n;
  }

  async raise(entityKey: string, period: CounterPeriod, atLeast: bigint): Promise<bigint> {
    const row = this.row(entityKey, period);
    if (row.seq < atLeast) row.seq = atLeast;
    return row.seq;
  }

  /** Puts a period's counter back to `seq` (a restored database). */
  setBack(entityKey: string, periodId: string, seq: bigint): void {
    const row = this.rows.get(`${entityKey} ${periodId}`);
    if (row) row.seq = seq;
  }

  async prune(before: number): Promise<number> {
    let n = 0;
    for (const [key, row] of this.rows) if (row.end < before && this.rows.delete(key)) n++;
    return n;
  }

  private row(entityKey: string, period: CounterPeriod): { seq: bigint; end: number } {
    const key = `${entityKey} ${period.id}`;
    const row = this.rows.get(key) ?? { seq: 0n, end: period.end };
    this.rows.set(key, row);
    return row;
  }
}
