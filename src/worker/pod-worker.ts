import { ConfigError } from '../errors';
import type { WorkerLease, WorkerLeaseOptions } from './lease';

/** The worker id a pod's ordinal names (IDPOOL_WORKER_ID=ordinal), and where it came from. */
export interface PodWorker {
  readonly workerId: number;
  /** Where the number came from, for messages: `HOSTNAME idpool-3 + IDPOOL_WORKER_ID_OFFSET 10`. */
  readonly from: string;
}

/**
 * Waits for a started `lease` of exactly `pod.workerId` to hold it, so a number given to two pods is
 * refused, not trusted: held by a live instance, waits one TTL and a heartbeat (a killed pod's lease
 * lapses within that), then stops the lease and throws {@link ConfigError}.
 */
export async function awaitPodWorker(
  lease: WorkerLease,
  pod: PodWorker,
  { clock, log, ttlMs, heartbeatSeconds }: Pick<WorkerLeaseOptions, 'clock' | 'log' | 'ttlMs' | 'heartbeatSeconds'>,
): Promise<void> {
  const deadline = clock.monotonic() + ttlMs + heartbeatSeconds * 1000;
  while (lease.workerId === undefined && clock.monotonic() < deadline) {
    log.warn(
      { workerId: pod.workerId, from: pod.from },
      "the pod's worker id is leased by another instance; waiting for that lease to lapse",
    );
    await clock.sleep(heartbeatSeconds * 1000);
    await lease.acquire();
  }
  if (lease.workerId === undefined) {
    await lease.stop();
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      `worker id ${pod.workerId} (${pod.from}) is leased by a live instance, renewed for ${Math.round((ttlMs + heartbeatSeconds * 1000) / 1000)} s: two pods were given one ordinal (another StatefulSet of that name on this database? set IDPOOL_WORKER_ID_OFFSET apart), or IDPOOL_WORKER_MIN..MAX of leasing instances covers it`,
    );
  }
}
