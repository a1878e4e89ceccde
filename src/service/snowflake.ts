import type { Clock } from '../clock';
import type { Config, SnowflakeRuntimeSettings } from '../config/config';
import type { Database } from '../db/database';
import type { SnowflakeIssuer } from '../http/app';
import type { Logger } from '../logger';
import { explainId } from '../snowflake/explain';
import { SnowflakeLayout } from '../snowflake/layout';
import { Snowflake } from '../snowflake/snowflake';
import { fixedWorker } from '../snowflake/worker-source';
import { WorkerLease, type WorkerView, instanceCode } from '../worker/lease';
import { SqlWorkerStore } from '../worker/worker-store';

/** The snowflake half of a running service: generator, lease, and what HTTP needs from them. */
export interface SnowflakeRuntime {
  readonly generator: Snowflake;
  /** Undefined with a fixed `IDPOOL_WORKER_ID`. */
  readonly lease: WorkerLease | undefined;
  readonly issuer: SnowflakeIssuer;
  readonly workers: { list(): Promise<WorkerView[]> };
  /** 'ok', or why no snowflake id can be issued now (for `readyz`). */
  leaseCheck(): string;
  /** Starts the heartbeat (node-cron). */
  start(): void;
  /** Stops the heartbeat and frees the worker id. Call after the server stopped taking requests. */
  stop(): Promise<void>;
}

export interface SnowflakeRuntimeDeps {
  config: Config;
  db: Database;
  clock: Clock;
  log: Logger;
  /** Overrides of `config.lease`. */
  settings?: Partial<SnowflakeRuntimeSettings>;
}

/**
 * Builds the generator on the service's worker id: a fixed
 * `IDPOOL_WORKER_ID`, or a lease from the `worker` table (checked for clock
 * skew and acquired here; throws {@link ConfigError} or ClockSkewError).
 */
export async function createSnowflakeRuntime(deps: SnowflakeRuntimeDeps): Promise<SnowflakeRuntime> {
  const { config, db, clock, log } = deps;
  const settings = { ...config.lease, ...deps.settings };
  const layout = SnowflakeLayout.create(config.snowflake, clock.now());
  let lease: WorkerLease | undefined;
  if (config.workerId === undefined) {
    lease = new WorkerLease({
      ...settings,
      store: new SqlWorkerStore(db),
      clock,
      log: log.child({ component: 'worker-lease' }),
      min: config.workerMin,
      max: config.workerMax,
      preferSameCode: config.workerPreferSameCode,
      code: instanceCode(config.port),
    });
    await lease.start();
  }
  const generator = new Snowflake({ layout, worker: lease ?? fixedWorker(config.workerId!), clock, maxWaitMs: settings.maxWaitMs });
  lease?.trackUsage(() => generator.lastUsedMs());
  log.info({ layout: layout.describe(), worker: lease ? (lease.workerId ?? 'none free') : `fixed ${config.workerId}` }, 'snowflake generator ready');

  return {
    generator,
    lease,
    issuer: {
      take: (entityKey, count) => generator.takeStrings(entityKey, count),
      decode: (id) => explainId(layout, clock.now(), id),
    },
    workers: {
      list: async () => (lease ? lease.list() : [{ workerId: config.workerId!, code: 'fixed (IDPOOL_WORKER_ID)', leaseVersion: 0, heartbeatAt: null, lastTimestamp: null, live: true, self: true }]),
    },
    leaseCheck() {
      if (!lease) return 'ok';
      const status = lease.status();
      return status.ok ? 'ok' : status.detail;
    },
    start() {
      lease?.startHeartbeat();
    },
    async stop() {
      await lease?.stop();
    },
  };
}
