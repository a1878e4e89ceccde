/**
 * One counter per (entity, period) in `number_period`, reserved in segments as `current_offset` is (allocator.ts):
 * committed before any of its numbers exists, so a crash wastes numbers and never repeats them. A counter never
 * passes its period's capacity (10^N − 1 for `{seq:N}`).
 */
import { type Clock, systemClock } from '../clock';
import { type Database, whileBusy } from '../db/database';
import type { Period } from '../numbers/period';

/** Sequences `first..last` (inclusive) of one period, reserved. */
export interface SeqRange {
  readonly first: bigint;
  readonly last: bigint;
}

/** A period as the counter needs it: its row is pruned once `end` is older than the retention. */
export type CounterPeriod = Pick<Period, 'id' | 'end'>;

export interface NumberCounter {
  /** Reserves the next `size` sequences of `period` (fewer when fewer are left below `capacity`; none: it is full). */
  reserve(entityKey: string, period: CounterPeriod, size: number, capacity: bigint): Promise<SeqRange | undefined>;
  /** The highest sequence reserved in the period (0 before the first). */
  peek(entityKey: string, periodId: string): Promise<bigint>;
  /** Moves the period's counter up to at least `atLeast` (never down); resolves to the counter after. */
  raise(entityKey: string, period: CounterPeriod, atLeast: bigint): Promise<bigint>;
  /** Deletes the rows of periods that ended before `before` (Unix ms); resolves to how many. */
  prune?(before: number): Promise<number>;
}

/** Two days after its end (docs/numbers.md): far past any clock skew, so no pruned period is reserved again. */
export const NUMBER_PERIOD_RETENTION_MS = 2 * 86_400_000;

export class SqlNumberCounter implements NumberCounter {
  private readonly insertRow: string;
  private readonly bigint: string;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock = systemClock,
  ) {
    const [before, after] = db.dialect === 'mysql' ? ['INSERT IGNORE', ''] : ['INSERT', ' ON CONFLICT DO NOTHING'];
    this.bigint = db.dialect === 'mysql' ? 'SIGNED' : 'BIGINT';
    this.insertRow = `${before} INTO number_period (entity_key, period, seq, period_end, update_time) VALUES (?, ?, 0, ?, ?)${after}`;
  }

  async reserve(
    entityKey: string,
    period: CounterPeriod,
    size: number,
    capacity: bigint,
  ): Promise<SeqRange | undefined> {
    if (!Number.isSafeInteger(size) || size <= 0) throw new RangeError(`size must be a positive integer, got ${size}`);
    let want = BigInt(size);
    // A few rounds at most: the row missing (first reservation of the period), then fewer left than asked.
    for (let round = 0; round < 4; round++) {
      const last = await this.tryReserve(entityKey, period.id, want, capacity);
      if (last !== undefined) return { first: last - want + 1n, last };
      const current = await this.peekRow(entityKey, period.id);
      if (current === undefined) {
        await this.busyRetry(() =>
          this.db.execute(this.insertRow, [entityKey, period.id, period.end, this.clock.now()]),
        );
        continue;
      }
      if (current >= capacity) return undefined;
      if (current + want > capacity) want = capacity - current;
    }
    // Others kept taking what was left between our reads: as good as full for now.
    return undefined;
  }

  /** The new counter when `want` more fit below `capacity` (one round trip), else undefined. */
  private async tryReserve(
    entityKey: string,
    periodId: string,
    want: bigint,
    capacity: bigint,
  ): Promise<bigint | undefined> {
    const now = this.clock.now();
    if (this.db.dialect === 'mysql') {
      const result = await this.db.execute(
        'UPDATE number_period SET seq = LAST_INSERT_ID(seq + ?), update_time = ? WHERE entity_key = ? AND period = ? AND seq <= CAST(? AS SIGNED)',
        // A number, not a string: MySQL adds a string to a BIGINT in floating point.
        [Number(want), now, entityKey, periodId, (capacity - want).toString()],
      );
      if (result.affectedRows !== 1 || result.insertId === undefined) return undefined;
      return BigInt(result.insertId);
    }
    // CAST: better-sqlite3 binds numbers as REAL (see allocator.ts); strings cast to BIGINT stay exact.
    const rows = await this.busyRetry(() =>
      this.db.query<{ seq: string }>(
        `UPDATE number_period SET seq = seq + CAST(? AS BIGINT), update_time = ? WHERE entity_key = ? AND period = ? AND seq <= CAST(? AS BIGINT) RETURNING ${this.db.bigText('seq')} AS seq`,
        [want.toString(), now, entityKey, periodId, (capacity - want).toString()],
      ),
    );
    return rows.length === 1 ? BigInt(rows[0].seq) : undefined;
  }

  async peek(entityKey: string, periodId: string): Promise<bigint> {
    return (await this.peekRow(entityKey, periodId)) ?? 0n;
  }

  private async peekRow(entityKey: string, periodId: string): Promise<bigint | undefined> {
    const rows = await this.db.query<{ seq: string }>(
      `SELECT ${this.db.bigText('seq')} AS seq FROM number_period WHERE entity_key = ? AND period = ?`,
      [entityKey, periodId],
    );
    return rows[0] ? BigInt(rows[0].seq) : undefined;
  }

  async raise(entityKey: string, period: CounterPeriod, atLeast: bigint): Promise<bigint> {
    const n = atLeast.toString();
    await this.busyRetry(() => this.db.execute(this.insertRow, [entityKey, period.id, period.end, this.clock.now()]));
    await this.busyRetry(() =>
      this.db.execute(
        `UPDATE number_period SET seq = CAST(? AS ${this.bigint}), update_time = ? WHERE entity_key = ? AND period = ? AND seq < CAST(? AS ${this.bigint})`,
        [n, this.clock.now(), entityKey, period.id, n],
      ),
    );
    return this.peek(entityKey, period.id);
  }

  async prune(before: number): Promise<number> {
    const result = await this.busyRetry(() =>
      this.db.execute('DELETE FROM number_period WHERE period_end < ?', [before]),
    );
    return result.affectedRows;
  }

  /** Run again while another process holds SQLite's write lock. */
  private busyRetry<T>(run: () => Promise<T>): Promise<T> {
    return whileBusy(run, this.clock);
  }
}
