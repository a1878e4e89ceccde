import type { Clock } from '../clock';
import type { EntityCatalog } from '../entities/registry';
import { errorMessage } from '../errors';
import type { Logger } from '../logger';
import { LOOP_FAILURE_LIMITS, RepeatLimiter, withRepeated } from '../repeat-limiter';
import { type Periodic, every } from '../schedule';
import type { FenceCarrier } from './fence-carry';
import type { PoolStore, RefillLock } from './pool-store';

export interface FenceCheckOptions {
  entities: Pick<EntityCatalog, 'segmentKeys'>;
  /** Every live segment entity's `current_offset` in one query, and their digest in one row (without it every run reads all). */
  offsets: { peekAll(): Promise<Map<string, bigint>>; offsetsMark?(): Promise<string> };
  /** Segments reserved here (`Refiller.stats.segmentsReserved`): a fence rises only by pushing one, so the next run reads all. */
  reservations?: () => number;
  store: Pick<PoolStore, 'fences'>;
  lock: RefillLock;
  carrier: Pick<FenceCarrier, 'numberAbove' | 'caughtUp' | 'carryIfBehind'>;
  clock: Clock;
  log: Logger;
  /** Period (IDPOOL_FENCE_CHECK_MS); 0 turns the check off. */
  intervalMs: number;
}

/** Carries at once after a whole database is restored: ~5 round trips each, 10,000 entities in ~2 s (as the refiller). */
const CARRIES_IN_FLIGHT = 32;

/**
 * Every fence is read at least this often, whatever the digest says: the bound on a restore it cannot tell (losses made
 * up exactly by other instances' reservations). ~3 ms of CPU per 1,000 entities (`bench/idle.bench.ts`).
 */
const FULL_RUN_MS = 60_000;

/** What the last full run that found nothing behind started from: while nothing moved since, a run reads one row. */
interface CleanRun {
  mark: string;
  reservations: number;
  at: number;
}

/**
 * Every `intervalMs`, carries each segment entity whose offset is below its Redis fence past it (docs/ha.md "Restores
 * and failovers"). Without it a database restored under full pools stayed behind until a refill met the fence (5–306 s
 * in the chaos runs), and a Redis loss then repeated ids. A run: one pipeline per node and one SQL query.
 */
export class FenceCheck {
  private readonly schedule: Periodic | undefined;
  private readonly failureLog: RepeatLimiter;
  /** Runs started and completed (one started after a restore has carried it once completed), digest-only, carries. */
  readonly stats = { started: 0, completed: 0, digestOnly: 0, carried: 0 };
  private clean: CleanRun | undefined;

  constructor(private readonly options: FenceCheckOptions) {
    this.failureLog = new RepeatLimiter(options.clock, LOOP_FAILURE_LIMITS);
    this.schedule = options.intervalMs > 0 ? every(options.intervalMs, () => this.run(), options.clock) : undefined;
  }

  start(): void {
    this.schedule?.start();
  }

  stop(): Promise<void> {
    return this.schedule?.stop() ?? Promise.resolve();
  }

  /** One check; never throws (failures are logged, the next run tries again). Fences before offsets, as in `carryIfBehind`. */
  async run(): Promise<void> {
    this.stats.started++;
    try {
      const start = await this.startingPoint();
      const { clean } = this;
      const unchanged = start && clean?.mark === start.mark && clean.reservations === start.reservations;
      if (unchanged && start.at - clean.at < FULL_RUN_MS) {
        this.stats.digestOnly++;
        return;
      }
      const found = await this.findBehind().catch((err: unknown) => this.logFailure('*', err));
      if (!found) return;
      const { behind } = found;
      // Every entity clear and read: later runs read the digest until something moves.
      this.clean = start && behind.length === 0 && !found.failed ? start : undefined;
      let next = 0;
      const worker = async () => {
        while (next < behind.length) {
          const key = behind[next++];
          await this.carry(key).catch((err: unknown) => this.logFailure(key, err));
        }
      };
      await Promise.all(Array.from({ length: Math.min(CARRIES_IN_FLIGHT, behind.length) }, worker));
    } finally {
      this.stats.completed++;
    }
  }

  /** Digest and reservations, read before any fence (a push under way is in them or in the fences); undefined: read all. */
  private async startingPoint(): Promise<CleanRun | undefined> {
    const { offsets } = this.options;
    if (!offsets.offsetsMark) return undefined;
    const reservations = this.options.reservations?.() ?? 0;
    const at = this.options.clock.monotonic();
    // Unread: the full read that follows reports the failure.
    const mark = await offsets.offsetsMark().catch(() => undefined);
    return mark === undefined ? undefined : { mark, reservations, at };
  }

  /** The entities whose offset is below their fence (and whether any fence could not be read); ends the episode of those past it. */
  private async findBehind(): Promise<{ behind: string[]; failed: boolean }> {
    const keys = this.options.entities.segmentKeys();
    if (keys.length === 0) return { behind: [], failed: false };
    const fences = await this.options.store.fences(keys);
    const offsets = await this.options.offsets.peekAll();
    const behind: string[] = [];
    let failed = false;
    keys.forEach((key, i) => {
      const fence = fences[i];
      // One entity's keys failing (its Cluster node) is logged with its key; the rest go on.
      if (fence instanceof Error) {
        failed = true;
        this.logFailure(key, fence);
        return;
      }
      const offset = offsets.get(key);
      // No fence: nothing pushed yet. No row: retired since the registry was read.
      if (fence === undefined || offset === undefined) return;
      if (offset < this.options.carrier.numberAbove(key, fence)) behind.push(key);
      else this.options.carrier.caughtUp(key);
    });
    return { behind, failed };
  }

  /** Carries one entity under its refill lock; one held elsewhere is a refill that will meet the fence and carry itself. */
  private async carry(entityKey: string): Promise<void> {
    const held = await this.options.lock.acquire(entityKey);
    if (!held) return;
    try {
      if (await this.options.carrier.carryIfBehind(entityKey)) this.stats.carried++;
    } finally {
      await held.release();
    }
  }

  private logFailure(entityKey: string, err: unknown): void {
    const repeated = this.failureLog.admit(entityKey);
    if (repeated === undefined) return;
    this.options.log.warn(
      withRepeated({ entityKey, err: errorMessage(err) }, repeated),
      'fence check failed: tried again at the next run',
    );
  }
}
