import { systemClock } from '../clock';
import { openDatabase } from '../db/database';
import { type Logger, silentLogger } from '../logger';
import { SnowflakeLayout } from '../snowflake/layout';
import { Snowflake, type SnowflakeOptions } from '../snowflake/snowflake';
import { DEFAULT_LEASE, type LeaseSettings, WorkerLease, instanceCode } from './lease';
import { SqlWorkerStore } from './worker-store';

/** Lease timing plus the snowflake generator's longest wait: what the service runs its generator with. */
export interface SnowflakeRuntimeSettings extends LeaseSettings {
  /** Longest wait for a request (second clock rollback, exhausted sequence) before 503 `unavailable`. */
  maxWaitMs: number;
  /** How often the running service compares its clock with Redis's and the database's (IDPOOL_CLOCK_CHECK_MS; 0: never). */
  clockCheckMs: number;
}

/** Options of {@link snowflakeWithLease}: where the `worker` table is, and how to lease from it. */
export interface SnowflakeLeaseOptions extends Omit<SnowflakeOptions, 'workerId' | 'worker' | 'onClose'> {
  /** `mysql://user:pass@host:3306/db`, `postgres://user:pass@host:5432/db` or `sqlite:PATH` (the table is created by migration). */
  databaseUrl: string;
  /** Worker ids this deployment may lease; default 1..2^workerBits − 1. */
  workerMin?: number;
  workerMax?: number;
  /** Take the row last held by the same `code` when it is free. */
  preferSameCode?: boolean;
  /** This instance's `{ip}:{port}#{mac}`; default from the first external interface, port 0. */
  code?: string;
  /** TTL, margin, heartbeat and skew; defaults as the service's. */
  lease?: Partial<LeaseSettings>;
  log?: Logger;
}

/**
 * `Snowflake.withLease`: a generator on a worker id leased like the service's; NoWorkerLeaseError
 * when every one is taken. Its `close()` frees the worker id and the database connection.
 */
export async function snowflakeWithLease(options: SnowflakeLeaseOptions): Promise<Snowflake> {
  const clock = options.clock ?? systemClock;
  const layout =
    options.layout instanceof SnowflakeLayout ? options.layout : SnowflakeLayout.create(options.layout, clock.now());
  const db = await openDatabase(options.databaseUrl);
  const lease = new WorkerLease({
    ...DEFAULT_LEASE,
    ...options.lease,
    store: new SqlWorkerStore(db),
    clock,
    log: options.log ?? silentLogger,
    min: options.workerMin ?? 1,
    max: options.workerMax ?? layout.maxWorker,
    preferSameCode: options.preferSameCode ?? false,
    code: options.code ?? instanceCode(0),
  });
  const close = async () => {
    await lease.stop();
    await db.close();
  };
  try {
    await lease.start();
    lease.current(); // throws NoWorkerLeaseError saying why none is held
  } catch (err) {
    await close();
    throw err;
  }
  lease.startHeartbeat();
  const snowflake = new Snowflake({ ...options, layout, worker: lease, clock, onClose: close });
  lease.trackUsage(() => snowflake.lastUsedMs());
  return snowflake;
}
