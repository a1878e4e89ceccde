/**
 * Where a generator gets its worker id. A fixed id (library, tests,
 * `IDPOOL_WORKER_ID`) or a database lease (`worker/lease.ts`) that can lapse
 * and be replaced; the generator asks on every call and resets its sequences
 * whenever the grant changes.
 */
export interface WorkerGrant {
  readonly workerId: number;
  /**
   * Unix ms recorded as the worker's last timestamp when this grant began:
   * time units that start at or before it are never used by this grant.
   */
  readonly floorMs: number;
}

export interface WorkerSource {
  /** The grant in force now. Throws (503 `unavailable`) when there is none. */
  current(): WorkerGrant;
  /**
   * Unix ms up to which ids may be issued: the value already recorded in the
   * database, so a crash never leaves ids above what the next holder of the
   * worker id starts from. Infinity without a lease.
   */
  readonly ceilingMs: number;
}

/** A worker id given explicitly: always valid, no ceiling; ids start after `floorMs` (default: no floor). */
export function fixedWorker(workerId: number, floorMs = -Infinity): WorkerSource {
  const grant: WorkerGrant = Object.freeze({ workerId, floorMs });
  return { current: () => grant, ceilingMs: Infinity };
}
