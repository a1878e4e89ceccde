import type { Clock } from '../clock';
import { type Config, ConfigError, loadConfig } from '../config/config';
import type { Database } from '../db/database';
import type { SnowflakeDecoder } from '../http/app';
import type { Logger } from '../logger';
import { explainId } from '../snowflake/explain';
import { SnowflakeLayout } from '../snowflake/layout';
import { Snowflake, type SnowflakeOptions } from '../snowflake/snowflake';
import { type WorkerSource, fixedWorker } from '../snowflake/worker-source';
import { WorkerLease, type WorkerView, instanceCode } from '../worker/lease';
import type { SnowflakeRuntimeSettings } from '../worker/snowflake-lease';
import type { WorkerHolders } from '../worker/worker-holders';
import { SqlWorkerStore } from '../worker/worker-store';
import { errorMessage } from '../errors';

/** The snowflake half of a running service: generator, lease, and what HTTP needs from them. */
export interface SnowflakeRuntime {
  readonly generator: Snowflake;
  /** Undefined with a fixed `IDPOOL_WORKER_ID`. */
  readonly lease: WorkerLease | undefined;
  readonly decoder: SnowflakeDecoder;
  readonly workers: { list(): Promise<WorkerView[]> };
  /** 'ok', or why no snowflake id can be issued now (for `readyz`). */
  leaseCheck(): string;
  /** Starts the lease's heartbeat (a no-op for a fixed worker id). */
  start(): void;
  /** Stops the heartbeat and frees the worker id. Call after the server stopped taking requests. */
  stop(): Promise<void>;
}

export interface SnowflakeRuntimeDeps {
  config: Config;
  db: Database;
  clock: Clock;
  log: Logger;
  /** The worker leases' record outside the database (with Redis). */
  holders: WorkerHolders | undefined;
  /** Overrides of `config.lease`. */
  settings?: Partial<SnowflakeRuntimeSettings>;
}

/** Where the service's worker id comes from, and how to give it back on stop. */
interface ServiceWorker {
  readonly source: WorkerSource;
  readonly lease: WorkerLease | undefined;
  /** Tells the worker how to learn the last time unit the generator used. */
  trackUsage(lastUsedMs: () => number | undefined): void;
  stop(): Promise<void>;
}

/** A worker id leased from the `worker` table (checked for clock skew and acquired here). */
async function leasedWorker(
  config: Config,
  db: Database,
  holders: WorkerHolders | undefined,
  settings: SnowflakeRuntimeSettings,
  clock: Clock,
  log: Logger,
): Promise<ServiceWorker> {
  const lease = new WorkerLease({
    ...settings,
    store: new SqlWorkerStore(db),
    holders,
    clock,
    log: log.child({ component: 'worker-lease' }),
    min: config.workerMin,
    max: config.workerMax,
    preferSameCode: config.workerPreferSameCode,
    code: instanceCode(config.port),
  });
  await lease.start();
  return { source: lease, lease, trackUsage: (used) => lease.trackUsage(used), stop: () => lease.stop() };
}

/**
 * A fixed `IDPOOL_WORKER_ID`: no exclusivity between processes, so the
 * service takes it only with IDPOOL_WORKER_ID_UNSAFE=1, and even then starts
 * above the `last_timestamp` its row records and records its own on stop.
 */
async function fixedServiceWorker(workerId: number, db: Database, log: Logger): Promise<ServiceWorker> {
  const store = new SqlWorkerStore(db);
  await store.ensureRows(workerId, workerId);
  const [row] = (await store.rows(workerId, workerId)).rows;
  let lastUsed: () => number | undefined = () => undefined;
  return {
    source: fixedWorker(workerId, row.lastTimestamp),
    lease: undefined,
    trackUsage: (used) => void (lastUsed = used),
    async stop() {
      const used = Math.max(row.lastTimestamp, lastUsed() ?? 0);
      await store
        .release(workerId, row.leaseVersion, used)
        .catch((err: unknown) =>
          log.warn({ err: errorMessage(err) }, "could not record the fixed worker id's last timestamp"),
        );
    },
  };
}

/**
 * Builds the generator on the service's worker id: a lease from the
 * `worker` table, or a fixed `IDPOOL_WORKER_ID` when IDPOOL_WORKER_ID_UNSAFE
 * allows it. Throws {@link ConfigError} or ClockSkewError.
 */
export async function createSnowflakeRuntime(deps: SnowflakeRuntimeDeps): Promise<SnowflakeRuntime> {
  const { config, db, clock, log } = deps;
  const settings = { ...config.lease, ...deps.settings };
  const layout = SnowflakeLayout.create(config.snowflake, clock.now());
  if (config.workerId !== undefined && !config.workerIdUnsafe) {
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      'turns off the worker lease (no exclusivity between processes); unset it to lease a worker id from the database, or set IDPOOL_WORKER_ID_UNSAFE=1 to accept that risk',
    );
  }
  const worker =
    config.workerId === undefined
      ? await leasedWorker(config, db, deps.holders, settings, clock, log)
      : await fixedServiceWorker(config.workerId, db, log);
  const { lease } = worker;
  const generator = new Snowflake({ layout, worker: worker.source, clock, maxWaitMs: settings.maxWaitMs });
  worker.trackUsage(() => generator.lastUsedMs());
  log.info(
    { layout: layout.describe(), worker: lease ? (lease.workerId ?? 'none free') : `fixed ${config.workerId}` },
    'snowflake generator ready',
  );
  return {
    generator,
    lease,
    decoder: { decode: (id) => explainId(layout, clock.now(), id) },
    workers: {
      list: async () => {
        if (lease) return lease.list();
        // No lease: the fixed IDPOOL_WORKER_ID.
        const workerId = config.workerId;
        if (workerId === undefined) return [];
        return [
          {
            workerId,
            code: 'fixed (IDPOOL_WORKER_ID)',
            leaseVersion: 0,
            heartbeatAt: null,
            lastTimestamp: null,
            live: true,
            self: true,
          },
        ];
      },
    },
    leaseCheck() {
      if (!lease) return 'ok';
      const status = lease.status();
      return status.ok ? 'ok' : status.detail;
    },
    start() {
      lease?.startHeartbeat();
    },
    stop: () => worker.stop(),
  };
}

/**
 * A generator with the worker id in `IDPOOL_WORKER_ID` and the layout in the
 * `IDPOOL_SNOWFLAKE_*` variables (`Snowflake.fromEnv` in the public API).
 * Throws {@link ConfigError}.
 */
export function snowflakeFromEnv(
  env?: Record<string, string | undefined>,
  options: Omit<SnowflakeOptions, 'layout' | 'workerId' | 'worker'> = {},
): Snowflake {
  const config = loadConfig(env);
  if (config.workerId === undefined) {
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      "is not set; set it to this process's worker id, or use Snowflake.withLease() to lease one from the database",
    );
  }
  return new Snowflake({ ...options, layout: config.snowflake, workerId: config.workerId });
}
