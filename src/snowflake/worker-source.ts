/** A worker id and since when: the generator resets its sequences whenever the grant changes. */
export interface WorkerGrant {
  readonly workerId: number;
  /** The worker's last recorded timestamp, Unix ms: time units starting at or before it are never used. */
  readonly floorMs: number;
}

/** Where a generator gets its worker id: fixed, or a lease (`worker/lease.ts`) that can lapse. */
export interface WorkerSource {
  /** The grant in force now. Throws (503 `unavailable`) when there is none. */
  current(): WorkerGrant;
  /** Unix ms up to which ids may be issued: already recorded, so the next holder starts above (Infinity: no lease). */
  readonly ceilingMs: number;
}

/** A worker id given explicitly: always valid, no ceiling; ids start after `floorMs` (default: no floor). */
export function fixedWorker(workerId: number, floorMs = -Infinity): WorkerSource {
  const grant: WorkerGrant = Object.freeze({ workerId, floorMs });
  return { current: () => grant, ceilingMs: Infinity };
}
