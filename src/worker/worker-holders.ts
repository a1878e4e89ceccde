/**
 * The second record of the worker leases, outside the database (with Redis:
 * `redis-worker-holders.ts`). A database restored from a backup forgets the
 * leases granted since and the ceilings they recorded; this record does
 * not, so a worker id the restored table shows as free is never handed to
 * a new holder below a time its last holder could have used, and the
 * holder it was taken from stops at its next renewal (docs/ha.md "A restore
 * and snowflake worker leases").
 */
/** What {@link WorkerHolders.claim} found. */
export interface Claimed {
  readonly previousCeilingMs: number;
  readonly own: boolean;
}

export interface WorkerHolders {
  /** Each worker id's recorded ceiling, Unix ms (absent: none recorded). */
  ceilings(workerIds: readonly number[]): Promise<Map<number, number>>;
  /**
   * Records `token` as the holder of a worker id the database just granted
   * and raises its ceiling to `ceilingMs`; resolves to the ceiling recorded
   * before (0: none), below which the new holder must not issue, and
   * whether the holder until now was `lostToken` (this instance's own
   * grant, which the database forgot: nobody else used the worker id since).
   */
  claim(workerId: number, token: string, ceilingMs: number, lostToken?: string): Promise<Claimed>;
  /** A heartbeat: raises the ceiling to `ceilingMs` while `token` still holds the worker id; false once another claimed it. */
  renew(workerId: number, token: string, ceilingMs: number): Promise<boolean>;
  /** Gives the worker id back, its ceiling brought down to `lastUsedMs`, if `token` still holds it; false otherwise. */
  release(workerId: number, token: string, lastUsedMs: number): Promise<boolean>;
}
