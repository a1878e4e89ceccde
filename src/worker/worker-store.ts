import type { Database } from '../db/database';

/** One row of the `worker` table. Times are Unix ms (the database's clock for `heartbeatAt`). */
export interface WorkerRow {
  workerId: number;
  code: string;
  leaseVersion: number;
  heartbeatAt: number;
  lastTimestamp: number;
}

/** What a {@link WorkerLease} needs: conditional UPDATEs by the database's clock, so instances with other clocks agree. */
export interface WorkerStore {
  /** Creates the rows `min..max` that do not exist yet; concurrent callers never duplicate one. */
  ensureRows(min: number, max: number): Promise<void>;
  /** The database's clock, Unix ms. */
  nowMs(): Promise<number>;
  /** Rows `min..max`, with the database's clock at the time of reading. */
  rows(min: number, max: number): Promise<{ rows: WorkerRow[]; dbNowMs: number }>;
  /**
   * Takes `row` if unchanged since read (`lease_version`) and expired: bumps the version, sets code and
   * heartbeat, raises `last_timestamp` to at least `ceilingMs`.
   */
  acquire(row: WorkerRow, code: string, ttlMs: number, ceilingMs: number): Promise<boolean>;
  /** Heartbeat: only while `version` is still the row's; raises `last_timestamp` to at least `ceilingMs`. */
  renew(workerId: number, version: number, ceilingMs: number): Promise<boolean>;
  /** Frees the row now and records the last timestamp actually used. */
  release(workerId: number, version: number, lastTimestampMs: number): Promise<boolean>;
}

// BIGINT columns come back as decimal strings (db/database.ts).
type RawRow = { code: string } & Record<
  'worker_id' | 'lease_version' | 'heartbeat_at' | 'last_timestamp',
  number | string
>;

const toRow = (r: RawRow): WorkerRow => ({
  workerId: Number(r.worker_id),
  code: r.code,
  leaseVersion: Number(r.lease_version),
  heartbeatAt: Number(r.heartbeat_at),
  lastTimestamp: Number(r.last_timestamp),
});

/** Rows per INSERT when creating worker rows (at most 1024 exist). */
const INSERT_BATCH = 256;

/** The `worker` table on MySQL/MariaDB, PostgreSQL or SQLite. */
export class SqlWorkerStore implements WorkerStore {
  // A renewal's SET: heartbeat now, `last_timestamp` raised to at least the one parameter.
  private readonly renewed: string;

  constructor(private readonly db: Database) {
    const greatest = db.dialect === 'sqlite' ? 'MAX' : 'GREATEST';
    this.renewed = `heartbeat_at = ${db.nowMs}, last_timestamp = ${greatest}(last_timestamp, ?), update_time = ${db.nowMs}`;
  }

  async ensureRows(min: number, max: number): Promise<void> {
    const existing = await this.db.query<{ n: number | string }>(
      'SELECT COUNT(*) AS n FROM worker WHERE worker_id BETWEEN ? AND ?',
      [min, max],
    );
    if (Number(existing[0]?.n ?? 0) === max - min + 1) return;
    const now = await this.nowMs();
    // The primary key makes concurrent first starts safe: a row inserted first is skipped.
    const [insert, onConflict] =
      this.db.dialect === 'mysql' ? ['INSERT IGNORE', ''] : ['INSERT', ' ON CONFLICT DO NOTHING'];
    for (let from = min; from <= max; from += INSERT_BATCH) {
      const ids = Array.from({ length: Math.min(max - from + 1, INSERT_BATCH) }, (_, k) => from + k);
      await this.db.execute(
        `${insert} INTO worker (worker_id, code, lease_version, heartbeat_at, last_timestamp, create_time, update_time) VALUES ${ids.map(() => "(?, '', 0, 0, 0, ?, ?)").join(', ')}${onConflict}`,
        ids.flatMap((id) => [id, now, now]),
      );
    }
  }

  async nowMs(): Promise<number> {
    const rows = await this.db.query<{ now_ms: number | string }>(`SELECT ${this.db.nowMs} AS now_ms`);
    return Number(rows[0].now_ms);
  }

  async rows(min: number, max: number): Promise<{ rows: WorkerRow[]; dbNowMs: number }> {
    const raw = await this.db.query<RawRow & { now_ms: number | string }>(
      `SELECT worker_id, code, lease_version, heartbeat_at, last_timestamp, ${this.db.nowMs} AS now_ms
       FROM worker WHERE worker_id BETWEEN ? AND ? ORDER BY worker_id`,
      [min, max],
    );
    const dbNowMs = raw.length ? Number(raw[0].now_ms) : await this.nowMs();
    return { rows: raw.map(toRow), dbNowMs };
  }

  acquire(row: WorkerRow, code: string, ttlMs: number, ceilingMs: number): Promise<boolean> {
    return this.changesOne(
      `UPDATE worker SET code = ?, lease_version = lease_version + 1, ${this.renewed}
       WHERE worker_id = ? AND lease_version = ? AND heartbeat_at + ? <= ${this.db.nowMs}`,
      [code, Math.floor(ceilingMs), row.workerId, row.leaseVersion, ttlMs],
    );
  }

  renew(workerId: number, version: number, ceilingMs: number): Promise<boolean> {
    return this.changesOne(`UPDATE worker SET ${this.renewed} WHERE worker_id = ? AND lease_version = ?`, [
      Math.floor(ceilingMs),
      workerId,
      version,
    ]);
  }

  release(workerId: number, version: number, lastTimestampMs: number): Promise<boolean> {
    return this.changesOne(
      `UPDATE worker SET heartbeat_at = 0, last_timestamp = ?, update_time = ${this.db.nowMs} WHERE worker_id = ? AND lease_version = ?`,
      [Math.floor(lastTimestampMs), workerId, version],
    );
  }

  private async changesOne(sql: string, params: unknown[]): Promise<boolean> {
    return (await this.db.execute(sql, params)).affectedRows === 1;
  }
}
