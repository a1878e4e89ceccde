// The worker leases' second record, outside the database: a restored database forgets the leases
// and ceilings recorded since its backup, this does not (docs/ha.md "A restore and snowflake worker leases").

/** What {@link WorkerHolders.claim} found. */
export interface Claimed {
  readonly previousCeilingMs: number;
  readonly own: boolean;
}

export interface WorkerHolders {
  /** Each worker id's recorded ceiling, Unix ms (absent: none recorded). */
  ceilings(workerIds: readonly number[]): Promise<Map<number, number>>;
  /**
   * Records `token` as the holder of a just-granted worker id, its ceiling raised to `ceilingMs`: the
   * ceiling before (0: none), which the new holder must start above, and whether the holder was
   * `lostToken` (our own grant the database forgot: nobody else used the worker id since).
   */
  claim(workerId: number, token: string, ceilingMs: number, lostToken?: string): Promise<Claimed>;
  /** A heartbeat: raises the ceiling to `ceilingMs` while `token` still holds the worker id; false once another claimed it. */
  renew(workerId: number, token: string, ceilingMs: number): Promise<boolean>;
  /** Gives the worker id back, its ceiling brought down to `lastUsedMs`, if `token` still holds it; false otherwise. */
  release(workerId: number, token: string, lastUsedMs: number): Promise<boolean>;
}
