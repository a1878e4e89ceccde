import type { WorkerRow, WorkerStore } from './worker-store';

/** In-memory {@link WorkerStore} with the SQL one's conditions, for unit tests; `dbNow` is the database's clock. */
export class FakeWorkerStore implements WorkerStore {
  readonly table = new Map<number, WorkerRow>();
  /** Set to make the next calls fail like an unreachable database. */
  down = false;

  constructor(private readonly dbNow: () => number) {}

  private check(): void {
    if (this.down) throw new Error('database unreachable');
  }

  async ensureRows(min: number, max: number): Promise<void> {
    this.check();
    for (let id = min; id <= max; id++)
      if (!this.table.has(id))
        this.table.set(id, { workerId: id, code: '', leaseVersion: 0, heartbeatAt: 0, lastTimestamp: 0 });
  }

  async nowMs(): Promise<number> {
    this.check();
    return this.dbNow();
  }

  async rows(min: number, max: number): Promise<{ rows: WorkerRow[]; dbNowMs: number }> {
    this.check();
    const rows = [...this.table.values()].filter((r) => r.workerId >= min && r.workerId <= max).map((r) => ({ ...r }));
    return { rows: rows.sort((a, b) => a.workerId - b.workerId), dbNowMs: this.dbNow() };
  }

  async acquire(row: WorkerRow, code: string, ttlMs: number, ceilingMs: number): Promise<boolean> {
    this.check();
    const r = this.table.get(row.workerId);
    const now = this.dbNow();
    if (r?.leaseVersion !== row.leaseVersion || r.heartbeatAt + ttlMs > now) return false;
    Object.assign(r, { code, leaseVersion: r.leaseVersion + 1 });
    return this.renewed(r, ceilingMs, now);
  }

  async renew(workerId: number, version: number, ceilingMs: number): Promise<boolean> {
    this.check();
    const r = this.table.get(workerId);
    return r?.leaseVersion === version && this.renewed(r, ceilingMs);
  }

  private renewed(r: WorkerRow, ceilingMs: number, now = this.dbNow()): true {
    Object.assign(r, { heartbeatAt: now, lastTimestamp: Math.max(r.lastTimestamp, Math.floor(ceilingMs)) });
    return true;
  }

  async release(workerId: number, version: number, lastTimestampMs: number): Promise<boolean> {
    this.check();
    const r = this.table.get(workerId);
    if (r?.leaseVersion !== version) return false;
    Object.assign(r, { heartbeatAt: 0, lastTimestamp: Math.floor(lastTimestampMs) });
    return true;
  }
}
