// Grant, renewal and lapse share the lease's state and each other's invariants (docs/design.md
// invariant 5), so they stay in one class.
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { type Periodic, every } from '../schedule';
import { ClockSkewError, NoWorkerLeaseError } from '../snowflake/errors';
import type { WorkerGrant, WorkerSource } from '../snowflake/worker-source';
import type { WorkerHolders } from './worker-holders';
import type { WorkerRow, WorkerStore } from './worker-store';
import { errorMessage } from '../errors';

/** Timing of worker leases. */
export interface LeaseSettings {
  /** A lease not renewed for this long (database clock) may be taken by another instance. */
  ttlMs: number;
  /** The holder stops issuing this long before the TTL (its own monotonic clock), to cover drift and slow renewals. */
  marginMs: number;
  /** Heartbeat (renewal) period in whole seconds (IDPOOL_WORKER_HEARTBEAT_SECONDS). */
  heartbeatSeconds: number;
  /** Start-up is refused when the local clock and the database's differ by more than this. */
  maxClockSkewMs: number;
}

/**
 * A 15 s TTL renewed every 3 s survives four missed heartbeats; stopping 3 s early covers a slow
 * UPDATE and drift. 1 s of skew is far above NTP-synced hosts' few ms and far below the TTL.
 */
export const DEFAULT_LEASE: Readonly<LeaseSettings> = {
  ttlMs: 15_000,
  marginMs: 3_000,
  heartbeatSeconds: 3,
  maxClockSkewMs: 1_000,
};

export interface WorkerLeaseOptions extends LeaseSettings {
  store: WorkerStore;
  /** The leases' record outside the database (Redis), which a restore of the database cannot undo. */
  holders?: WorkerHolders;
  clock: Clock;
  log: Logger;
  /** This deployment's worker ids (`IDPOOL_WORKER_MIN..MAX`). */
  min: number;
  max: number;
  /** Take the row this `code` held last, when it is free (`IDPOOL_WORKER_PREFER_SAME_CODE`). */
  preferSameCode: boolean;
  /** `{ip}:{port}#{mac}` of this instance. */
  code: string;
}

/** A lease as `GET /admin/workers` shows it. */
export interface WorkerView extends Pick<WorkerRow, 'workerId' | 'code' | 'leaseVersion'> {
  heartbeatAt: string | null;
  lastTimestamp: string | null;
  live: boolean;
  /** Held by the instance answering. */
  self: boolean;
}

interface Held extends WorkerGrant {
  readonly version: number;
  /** This grant's token in {@link WorkerHolders} (unused without them). */
  readonly token: string;
}

/** `{ip}:{port}#{mac}` of the first external IPv4 interface (loopback when there is none). */
export function instanceCode(port: number): string {
  const a = Object.values(networkInterfaces())
    .flat()
    .find((i) => i?.family === 'IPv4' && !i.internal);
  return a ? `${a.address}:${port}#${a.mac}` : `127.0.0.1:${port}#00:00:00:00:00:00`;
}

/**
 * One worker id leased from the `worker` table (docs/design.md "WorkerLease", invariant 5).
 *
 * - Acquire: a conditional UPDATE bumping `lease_version`, only once the row's heartbeat is older
 *   than the TTL by the database's clock. Renew: while the version is still ours.
 * - Each acquire/renew first records a ceiling (`now + TTL`) in `last_timestamp` and ids stay below
 *   it, so the next holder starts above every id this one issued, whatever happens to it.
 * - Fence: valid for `TTL − margin` after the last successful renewal was sent (monotonic clock).
 * - Second record (`holders`): a grant is claimed there with its own token and starts above the
 *   higher of both records' ceilings; a renewal counts only when both accept it. So after a database
 *   restore the new holder starts above the old, which stops at its next renewal (docs/ha.md
 *   "A restore and snowflake worker leases").
 */
export class WorkerLease implements WorkerSource {
  private held: Held | undefined;
  // The grant the database refused to renew while the second record still named it: taking that
  // worker id back, this instance knows what it used.
  private lost: Held | undefined;
  /** Monotonic ms until which `held` may be used. */
  private validUntil = -Infinity;
  private ceiling = -Infinity;
  private problem = 'not started';
  private task: Periodic | undefined;
  private stopped = false;
  private lastUsed: () => number | undefined = () => undefined;

  constructor(private readonly options: WorkerLeaseOptions) {}

  /** Checks clock skew ({@link ClockSkewError}), creates missing rows, tries to acquire (none free: see {@link status}). */
  async start(): Promise<void> {
    const { store, clock, maxClockSkewMs, min, max } = this.options;
    const before = clock.now();
    const dbNow = await store.nowMs();
    const after = clock.now();
    const skew = dbNow - (before + after) / 2;
    if (Math.abs(skew) > maxClockSkewMs + (after - before) / 2)
      throw new ClockSkewError(-skew, maxClockSkewMs, 1, "the database's");
    await store.ensureRows(min, max);
    await this.acquire();
  }

  /** Tells the lease how to learn the last timestamp used, recorded when it is released. */
  trackUsage(lastUsedMs: () => number | undefined): void {
    this.lastUsed = lastUsedMs;
  }

  /** Renews every `heartbeatSeconds`. */
  startHeartbeat(): void {
    if (this.task || this.stopped) return;
    this.task = every(this.options.heartbeatSeconds * 1000, () => this.heartbeat(), this.options.clock);
    this.task.start();
  }

  current(): WorkerGrant {
    const held = this.held;
    if (!held) throw new NoWorkerLeaseError(this.problem);
    if (this.options.clock.monotonic() >= this.validUntil) {
      throw new NoWorkerLeaseError(
        `the lease on worker id ${held.workerId} was not renewed within its TTL minus margin (${this.options.ttlMs - this.options.marginMs} ms); renewing`,
      );
    }
    return held;
  }

  get ceilingMs(): number {
    return this.ceiling;
  }

  /** Whether ids can be issued now, and if not, why (for `readyz`). */
  status(): { ok: boolean; detail: string } {
    try {
      return { ok: true, detail: `worker id ${this.current().workerId}` };
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
  }

  /** The worker id held now, valid or not (for logs and tests). */
  get workerId(): number | undefined {
    return this.held?.workerId;
  }

  /** One heartbeat: renew the lease, or acquire one when there is none or it was taken over. */
  async heartbeat(): Promise<void> {
    if (this.stopped) return;
    const { store, holders, clock, log } = this.options;
    try {
      const held = this.held;
      if (held) {
        const sentAt = clock.monotonic();
        const ceiling = clock.now() + this.options.ttlMs;
        // The second record first: once another instance claimed the worker id there, the row is
        // not ours to touch, even if its restored version matches ours.
        const claimed = holders !== undefined && !(await holders.renew(held.workerId, held.token, ceiling));
        if (!claimed && (await store.renew(held.workerId, held.version, ceiling))) {
          if (this.held === held) this.extend(sentAt, ceiling);
          return;
        }
        if (this.held !== held) return;
        this.held = undefined;
        this.ceiling = -Infinity;
        if (claimed) {
          log.error(
            { workerId: held.workerId },
            'worker id was claimed by another instance although this one held it (was the database restored?); stopped issuing with it, acquiring a new one',
          );
          this.problem = `lost worker id ${held.workerId} to another instance while holding it (the database was restored?)`;
        } else {
          this.lost = held;
          log.warn({ workerId: held.workerId }, 'worker lease was taken over by another instance; acquiring a new one');
          this.problem = `lost worker id ${held.workerId} to another instance after the lease lapsed`;
        }
      }
      // Bounded by each statement's timeout (db/mysql-driver.ts) and the next heartbeat's time: runs
      // of `every` never overlap, so a long one would push the next back.
      await this.acquire(clock.monotonic() + this.options.heartbeatSeconds * 1000);
    } catch (err) {
      log.warn({ err: errorMessage(err) }, 'worker lease heartbeat failed');
    }
  }

  /** Tries each expired row, best first, until `deadline` (monotonic ms); returns whether one was taken. */
  async acquire(deadline = Infinity): Promise<boolean> {
    const { store, holders, clock, log, min, max, ttlMs, code, preferSameCode } = this.options;
    const { rows, dbNowMs } = await store.rows(min, max);
    const free = rows.filter((r) => r.heartbeatAt + ttlMs <= dbNowMs);
    const recorded = holders ? await holders.ceilings(free.map((r) => r.workerId)) : new Map<number, number>();
    const last = (r: WorkerRow) => Math.max(r.lastTimestamp, recorded.get(r.workerId) ?? 0);
    // Least recently used first: the new holder never waits for the clock to pass its floor (and a
    // row a restored database shows free while its holder lives comes last).
    free.sort(
      (a, b) =>
        Number(preferSameCode && b.code === code) - Number(preferSameCode && a.code === code) ||
        last(a) - last(b) ||
        a.workerId - b.workerId,
    );
    for (const row of free) {
      if (this.stopped || clock.monotonic() > deadline) return false;
      const sentAt = clock.monotonic();
      const ceiling = clock.now() + ttlMs;
      if (await store.acquire(row, code, ttlMs, ceiling)) {
        const token = `${code}/${randomBytes(8).toString('hex')}`;
        const floorMs = Math.max(row.lastTimestamp, holders ? await this.claim(holders, row, token, ceiling) : 0);
        this.lost = undefined;
        this.held = Object.freeze({ workerId: row.workerId, version: row.leaseVersion + 1, floorMs, token });
        this.extend(sentAt, ceiling);
        log.info({ workerId: row.workerId, code, lastTimestamp: floorMs }, 'worker lease acquired');
        return true;
      }
    }
    this.problem = `every worker id in ${min}..${max} is leased by a live instance (${rows.length - free.length} live); widen IDPOOL_WORKER_MIN..IDPOOL_WORKER_MAX or stop an instance`;
    log.error({ min, max }, this.problem);
    return false;
  }

  // Claims a just-granted row in the second record: the ceiling recorded there before. On failure
  // the row is given back (best effort) and the error thrown.
  private async claim(holders: WorkerHolders, row: WorkerRow, token: string, ceiling: number): Promise<number> {
    const { store } = this.options;
    const lost = this.lost?.workerId === row.workerId ? this.lost : undefined;
    try {
      const claimed = await holders.claim(row.workerId, token, ceiling, lost?.token);
      // Still our own grant there: above what we used, not a ceiling we may never have reached.
      return lost && claimed.own ? this.lastUsedSince(lost) : claimed.previousCeilingMs;
    } catch (err) {
      await store
        .release(row.workerId, row.leaseVersion + 1, Math.max(row.lastTimestamp, ceiling))
        .catch(() => undefined);
      throw err;
    }
  }

  // The last Unix ms `grant` may have used: what the generator used, never below the grant's floor.
  private lastUsedSince(grant: Held): number {
    return Math.max(grant.floorMs, this.lastUsed() ?? grant.floorMs, 0);
  }

  private extend(sentAt: number, ceiling: number): void {
    this.validUntil = sentAt + this.options.ttlMs - this.options.marginMs;
    this.ceiling = Math.max(this.ceiling, ceiling);
  }

  /** Stops the heartbeat and frees the worker id, recording the last timestamp actually used. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.task?.stop();
    this.task = undefined;
    const held = this.held;
    this.held = undefined;
    this.problem = 'stopped';
    if (!held) return;
    // The generator stops with the server, so the record may come down to what was used.
    const last = this.lastUsedSince(held);
    try {
      // The second record first, as in `heartbeat`.
      const { holders } = this.options;
      if (holders && !(await holders.release(held.workerId, held.token, last))) return;
      await this.options.store.release(held.workerId, held.version, last);
    } catch (err) {
      this.options.log.warn(
        { err: errorMessage(err), workerId: held.workerId },
        'could not release the worker lease; it expires after its TTL',
      );
    }
  }

  /** Every row of the table, as `GET /admin/workers` shows it. */
  async list(): Promise<WorkerView[]> {
    const { rows, dbNowMs } = await this.options.store.rows(0, 2 ** 31 - 1);
    const iso = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : null);
    return rows.map((r) => ({
      ...r,
      heartbeatAt: iso(r.heartbeatAt),
      lastTimestamp: iso(r.lastTimestamp),
      live: r.heartbeatAt + this.options.ttlMs > dbNowMs,
      self: this.held?.workerId === r.workerId && this.held.version === r.leaseVersion,
    }));
  }
}
