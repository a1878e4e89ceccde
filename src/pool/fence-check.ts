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
  /** `current_offset` of every live segment entity in one query (`SqlSegmentAllocator.peekAll`). */
  offsets: { peekAll(): Promise<Map<string, bigint>> };
  store: Pick<PoolStore, 'fences'>;
  lock: RefillLock;
  carrier: Pick<FenceCarrier, 'numberAbove' | 'caughtUp' | 'carryIfBehind'>;
  clock: Clock;
  log: Logger;
  /** Period (IDPOOL_FENCE_CHECK_MS); 0 turns the check off. */
  intervalMs: number;
}

/**
 * Carries at once run here when many entities are behind (a whole database
 * restored): each is a lock, two reads and a reservation, ~5 round trips,
 * so 10,000 entities take ~2 s at 32 in flight, as many as the refiller runs.
 */
const CARRIES_IN_FLIGHT = 32;

/**
 * Every `intervalMs`, compares each segment entity's database offset with
 * its Redis fence and carries the ones behind past it (docs/ha.md "Restores
 * and failovers"). Without it, a database restored under full pools stayed
 * behind until each pool drained to its watermark and a refill met the
 * fence (5–306 s in the chaos runs), and a Redis data loss in that time
 * repeated ids. Costs one Redis pipeline per node (a GET per entity) and
 * one SQL query per run, whatever the number of entities; the carry itself
 * runs only for an entity found behind, under its refill lock.
 */
export class FenceCheck {
  private readonly schedule: Periodic | undefined;
  private readonly failureLog: RepeatLimiter;
  /** Runs started and completed, and entities carried: a run started after a restore has carried it once completed. */
  readonly stats = { started: 0, completed: 0, carried: 0 };

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

  /**
   * One check; never throws (a database or Redis that is down is logged at
   * most once a minute, and the next run tries again). The fences are read
   * before the offsets: a fence only rises by a push of a segment the
   * database had committed, so an offset read after it and below it is a
   * database that went back, not a refill seen between its reservation and
   * its push.
   */
  async run(): Promise<void> {
    this.stats.started++;
    try {
      await this.carryAll();
    } finally {
      this.stats.completed++;
    }
  }

  private async carryAll(): Promise<void> {
    let behind: string[];
    try {
      behind = await this.findBehind();
    } catch (err) {
      this.logFailure('*', err);
      return;
    }
    let next = 0;
    const worker = async () => {
      while (next < behind.length) {
        const key = behind[next++];
        await this.carry(key).catch((err: unknown) => this.logFailure(key, err));
      }
    };
    await Promise.all(Array.from({ length: Math.min(CARRIES_IN_FLIGHT, behind.length) }, worker));
  }

  /** The entities whose offset is below their fence; ends the episode of those past it. */
  private async findBehind(): Promise<string[]> {
    const keys = this.options.entities.segmentKeys();
    if (keys.length === 0) return [];
    const fences = await this.options.store.fences(keys);
    const offsets = await this.options.offsets.peekAll();
    const behind: string[] = [];
    keys.forEach((key, i) => {
      const fence = fences[i];
      // One entity's keys failing (its Cluster node) is logged with its key; the rest go on.
      if (fence instanceof Error) {
        this.logFailure(key, fence);
        return;
      }
      const offset = offsets.get(key);
      // No fence: nothing pushed yet. No row: retired since the registry was read.
      if (fence === undefined || offset === undefined) return;
      if (offset < this.options.carrier.numberAbove(key, fence)) behind.push(key);
      else this.options.carrier.caughtUp(key);
    });
    return behind;
  }

  /**
   * Carries one entity under its refill lock. A lock held elsewhere is a
   * refill under way: it reserves from the restored offset, its segment is
   * refused by the fence and it carries itself; else the next run does.
   */
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
