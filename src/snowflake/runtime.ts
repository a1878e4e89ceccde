import type { Clock } from '../clock';
import type { Config } from '../config/config';
import type { Database } from '../db/database';
import { InvalidRequestError } from '../errors';
import type { SnowflakeIssuer } from '../http/app';
import type { Logger } from '../logger';
import { WorkerLease, type WorkerView, instanceCode } from '../worker/lease';
import { type SnowflakeRuntimeSettings, runtimeSettingsFromEnv } from '../worker/settings';
import { SqlWorkerStore, type WorkerRow } from '../worker/worker-store';
import { SnowflakeLayout } from './layout';
import { Snowflake } from './snowflake';
import { fixedWorker } from './worker-source';

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
  /** Overrides of the lease/wait settings read from the environment. */
  settings?: Partial<SnowflakeRuntimeSettings>;
  env?: Record<string, string | undefined>;
}

/** The `worker` row of a fixed worker id (created if missing): its `last_timestamp` is the generator's floor. */
async function fixedWorkerRow(store: SqlWorkerStore, workerId: number): Promise<WorkerRow> {
  await store.ensureRows(workerId, workerId);
  const { rows } = await store.rows(workerId, workerId);
  return rows[0];
}

/** Decimal string of at most 19 digits: anything else cannot be a 63-bit id. */
const DECIMAL_ID = /^\d{1,19}$/;
const MAX_ID = (1n << 63n) - 1n;

/** `GET /apps/:key/ids/:id`: the fields of one id of this layout, or 400 when it cannot be one. */
export function decodeForHttp(layout: SnowflakeLayout, clock: Clock, text: string): Record<string, unknown> {
  if (!DECIMAL_ID.test(text)) throw new InvalidRequestError(`id must be a decimal integer (the form ids are issued in), got "${text.slice(0, 40)}"`);
  const id = BigInt(text);
  if (id > MAX_ID) throw new InvalidRequestError('id is above 2^63 - 1; snowflake ids are 63-bit');
  const parts = layout.decompose(id);
  const { reservedBits, reservedValue } = layout.settings;
  if (parts.reserved !== reservedValue) {
    throw new InvalidRequestError(`id ${text} is not from this layout: its ${reservedBits} reserved bits hold ${parts.reserved}, this layout sets ${reservedValue}`);
  }
  const madeAt = layout.unitStartMs(parts.timestamp);
  if (parts.timestamp > layout.timestampAt(clock.now())) {
    throw new InvalidRequestError(`id ${text} is not from this layout: its timestamp decodes to ${new Date(madeAt).toISOString()}, in the future`);
  }
  return {
    id: text,
    timestamp: new Date(madeAt).toISOString(),
    timestampMs: madeAt,
    worker: parts.worker,
    timeBack: parts.timeBack,
    sequence: parts.sequence,
    reserved: parts.reserved,
  };
}

/**
 * Builds the generator on the service's worker id: a fixed
 * `IDPOOL_WORKER_ID`, or a lease from the `worker` table (checked for clock
 * skew and acquired here; throws {@link ConfigError} or ClockSkewError).
 */
export async function createSnowflakeRuntime(deps: SnowflakeRuntimeDeps): Promise<SnowflakeRuntime> {
  const { config, db, clock, log } = deps;
  const settings = { ...runtimeSettingsFromEnv(deps.env ?? process.env), ...deps.settings };
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
  // A fixed worker id (IDPOOL_WORKER_ID_UNSAFE=1) still starts above what
  // its row records, and records its own last time unit on stop.
  const fixed = config.workerId === undefined ? undefined : await fixedWorkerRow(new SqlWorkerStore(db), config.workerId);
  const generator = new Snowflake({ layout, worker: lease ?? fixedWorker(config.workerId!, fixed!.lastTimestamp), clock, maxWaitMs: settings.maxWaitMs });
  lease?.trackUsage(() => generator.lastUsedMs());
  log.info({ layout: layout.describe(), worker: lease ? (lease.workerId ?? 'none free') : `fixed ${config.workerId}` }, 'snowflake generator ready');

  return {
    generator,
    lease,
    issuer: {
      take: (entityKey, count) => generator.takeStrings(entityKey, count),
      decode: (id) => decodeForHttp(layout, clock, id),
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
      if (fixed) {
        const used = Math.max(fixed.lastTimestamp, generator.lastUsedMs() ?? 0);
        await new SqlWorkerStore(db).release(fixed.workerId, fixed.leaseVersion, used).catch((err) => log.warn({ err: String(err?.message ?? err) }, 'could not record the fixed worker id\'s last timestamp'));
      }
    },
  };
}
