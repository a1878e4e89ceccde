import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { ConfigError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import { ClockSkewError } from '../snowflake/errors';
import { explainId } from '../snowflake/explain';
import { SnowflakeLayout, type SnowflakeSettings } from '../snowflake/layout';
import { Snowflake } from '../snowflake/snowflake';
import { type WorkerSource, fixedWorker } from '../snowflake/worker-source';
import type { RedisClient } from '../redis/connection';
import { redisTimeMs } from '../redis/info';
import { ClockWatch } from './clock-watch';
import { WorkerLease, instanceCode } from './lease';
import { type PodWorker, awaitPodWorker } from './pod-worker';
import type { SnowflakeRuntimeSettings } from './snowflake-lease';
import type { WorkerHolders } from './worker-holders';
import { SqlWorkerStore } from './worker-store';

/** What the service's snowflake ids are made on (the service's `Config` has these fields, read from IDPOOL_*). */
export interface SnowflakeServiceSettings {
  readonly snowflake: SnowflakeSettings;
  readonly lease: SnowflakeRuntimeSettings;
  readonly workerId: number | undefined;
  readonly workerIdUnsafe: boolean;
  readonly podWorker: PodWorker | undefined;
  readonly workerMin: number;
  readonly workerMax: number;
  readonly workerPreferSameCode: boolean;
  /** The port, in the lease's instance code. */
  readonly port: number;
}

export interface SnowflakeRuntimeDeps {
  config: SnowflakeServiceSettings;
  db: Database;
  clock: Clock;
  log: Logger;
  /** The worker leases' record outside the database (with Redis). */
  holders: WorkerHolders | undefined;
  /** Overrides of `config.lease`. */
  settings?: Partial<SnowflakeRuntimeSettings>;
  /** With Redis, its clock (TIME) is checked too; the database's always is. */
  redis: RedisClient | undefined;
}

// Where the service's worker id comes from; the lease itself, or a fixed id shaped like one.
type ServiceWorker = WorkerSource & Pick<WorkerLease, 'trackUsage' | 'stop' | 'list'>;

// A started lease: any free worker id of IDPOOL_WORKER_MIN..MAX, or with IDPOOL_WORKER_ID=ordinal the pod's own.
async function leasedWorker(
  deps: SnowflakeRuntimeDeps,
  settings: SnowflakeRuntimeSettings,
  store: SqlWorkerStore,
): Promise<WorkerLease> {
  const { config, holders, clock } = deps;
  const pod = config.podWorker;
  const options = { ...settings, store, holders, clock, log: deps.log.child({ component: 'worker-lease' }) };
  const lease = new WorkerLease({
    ...options,
    code: instanceCode(config.port),
    min: pod?.workerId ?? config.workerMin,
    max: pod?.workerId ?? config.workerMax,
    preferSameCode: !pod && config.workerPreferSameCode,
  });
  await lease.start();
  if (pod) await awaitPodWorker(lease, pod, options);
  return lease;
}

// A fixed IDPOOL_WORKER_ID is not exclusive, so only with IDPOOL_WORKER_ID_UNSAFE=1, and even then
// it starts above its row's `last_timestamp` and records its own on stop.
async function fixedServiceWorker(
  { workerIdUnsafe }: SnowflakeServiceSettings,
  workerId: number,
  store: SqlWorkerStore,
  serviceLog: Logger,
): Promise<ServiceWorker> {
  if (!workerIdUnsafe) {
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      'turns off the worker lease (no exclusivity between processes); unset it to lease a worker id from the database, or set IDPOOL_WORKER_ID_UNSAFE=1 to accept that risk',
    );
  }
  const log = serviceLog.child({ component: 'snowflake' });
  await store.ensureRows(workerId, workerId);
  const [row] = (await store.rows(workerId, workerId)).rows;
  let lastUsed: () => number | undefined = () => undefined;
  return {
    ...fixedWorker(workerId, row.lastTimestamp),
    trackUsage: (used) => void (lastUsed = used),
    async stop() {
      const used = Math.max(row.lastTimestamp, lastUsed() ?? 0);
      await store
        .release(workerId, row.leaseVersion, used)
        .catch((err: unknown) =>
          log.warn({ err: errorMessage(err) }, "could not record the fixed worker id's last timestamp"),
        );
    },
    list: async () => [
      {
        workerId,
        code: 'fixed (IDPOOL_WORKER_ID)',
        leaseVersion: 0,
        heartbeatAt: null,
        lastTimestamp: null,
        live: true,
        self: true,
      },
    ],
  };
}

/**
 * The generator on the service's worker id, the lease's heartbeat and the clock watch started;
 * closing stops them and frees the worker id. Throws {@link ConfigError} or ClockSkewError.
 * `deps.log` is the service's: a child of a child would write `component` twice in one line.
 */
export async function buildSnowflake(deps: SnowflakeRuntimeDeps) {
  const { config, db, clock, log, redis } = deps;
  const settings = { ...config.lease, ...deps.settings };
  const layout = SnowflakeLayout.create(config.snowflake, clock.now());
  const store = new SqlWorkerStore(db);
  const worker =
    config.workerId === undefined
      ? await leasedWorker(deps, settings, store)
      : await fixedServiceWorker(config, config.workerId, store, log);
  const lease = worker instanceof WorkerLease ? worker : undefined;
  const generator = new Snowflake({ layout, worker, clock, maxWaitMs: settings.maxWaitMs });
  worker.trackUsage(() => generator.lastUsedMs());
  log.info(
    {
      component: 'snowflake',
      layout: layout.describe(),
      worker: lease ? (lease.workerId ?? 'none free') : `fixed ${config.workerId}`,
    },
    'snowflake generator ready',
  );
  const clockWatch =
    settings.clockCheckMs > 0
      ? new ClockWatch({
          clock,
          references: [
            ...(redis ? [{ name: 'redis' as const, now: () => redisTimeMs(redis) }] : []),
            { name: 'database', now: () => store.nowMs() },
          ],
          maxSkewMs: settings.maxClockSkewMs,
          intervalMs: settings.clockCheckMs,
        })
      : undefined;
  lease?.startHeartbeat();
  clockWatch?.start();
  return {
    value: {
      generator,
      /** Undefined with a fixed `IDPOOL_WORKER_ID`. */
      lease,
      /** This instance's clock against Redis's and the database's; undefined with IDPOOL_CLOCK_CHECK_MS=0. */
      clockWatch,
      /** `count` ids of one entity's sequence; refused (503 `clock_skew`) while this instance's clock is past the bound. */
      async make(entityKey: string, count: number) {
        if (clockWatch?.state() === 'refusing')
          throw new ClockSkewError(clockWatch.worstSkewMs(), clockWatch.maxSkewMs, clockWatch.retryAfterSeconds);
        return generator.takeStrings(entityKey, count);
      },
      /** Explains one id; throws NotAnIdError when it is not one of this layout's. */
      decoder: { decode: (id: string) => explainId(layout, clock.now(), id) },
      workers: { list: () => worker.list() },
      /** 'ok', or why no snowflake id can be issued now (for `readyz`). */
      leaseCheck() {
        const status = lease?.status();
        return !status || status.ok ? 'ok' : status.detail;
      },
    },
    async close() {
      await clockWatch?.stop();
      await worker.stop();
    },
  };
}

/** The snowflake half of a running service: generator, lease, and what HTTP needs from them. */
export type SnowflakeRuntime = Awaited<ReturnType<typeof buildSnowflake>>['value'];
