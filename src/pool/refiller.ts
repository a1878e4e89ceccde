// The refill loop: the marks (low, reset, in flight) the tick, sweep and take path share, and the refill acting on them.
import type { EntityCatalog } from '../entities/registry';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { LOOP_FAILURE_LIMITS, RepeatLimiter, withRepeated } from '../repeat-limiter';
import { ActivityRound, type Periodic, every } from '../schedule';
import type { LineRaiser, Segment, SegmentAllocator } from '../segment/allocator';
import type { IdStride } from '../segment/stride';
import type { EntityConfig } from '../entities/entity';
import { FenceCarrier } from './fence-carry';
import type { Demand, PoolSizing } from './demand';
import type { PeriodPools } from './period-pools';
import type { PoolLevel, PoolStore, RefillLock } from './pool-store';
import type { RefillEvents } from './refill-events';
import { pushSegment } from './segment-push';
import { errorMessage } from '../errors';

export interface RefillerOptions {
  /** The entities; `numberKeys` (the business-number ones) with `periods`. */
  entities: EntityCatalog & { numberKeys?(): string[] };
  allocator: SegmentAllocator & LineRaiser;
  store: PoolStore;
  lock: RefillLock;
  stride: IdStride;
  clock: Clock;
  log: Logger;
  /** Refill tick (IDPOOL_REFILL_INTERVAL_MS). */
  intervalMs: number;
  /** Target depths and watermarks, from the take rates this refiller observes. */
  demand: Pick<Demand, 'observe' | 'target' | 'sizing'>;
  /** The numbers layer (`period-pools.ts`), which fills business-number pools per period; absent: segment pools only. */
  periods?: PeriodPools;
  /** Slow sweep over every entity, for pools drained by direct LPOP. */
  sweepMs?: number;
  /** Test seam: runs after a segment is reserved and before it is pushed. */
  beforePush?: (entityKey: string, segment: Segment) => Promise<void>;
  /** Metrics and alarms (`ops/observers.ts`; there too a logging-only implementation). */
  events: RefillEvents;
}

/** Active pools one sweep reads at most: 2,000 commands (LLEN + GET), a few ms of Redis. */
const SWEEP_BATCH = 1000;
/**
 * Idle pools one sweep reads, going round (50 s a round at 10,000 entities): 1,000 a second here and 1,000 in the
 * sampler cost 6.6 % of a core at 10,000 idle entities. A pool drained by direct pops is seen at its next read.
 */
const SWEEP_IDLE_BATCH = 200;
/** A pool taken from is read every sweep for this long after (its demand is measured from these reads). */
const ACTIVE_MS = 60_000;
/** Refills at once: after a failover every pool is reset; 32 keep the database busy where 100,000 would swamp it. */
const MAX_REFILLS_IN_FLIGHT = 32;
/** The ticker's wait while no entity is marked low (marking one wakes it at once). */
const IDLE_TICK_MS = 60_000;

/** Keeps each pool between its low watermark and `maxPoolSize`; a tick refills only entities marked low (an idle one costs nothing). */
export class Refiller {
  private readonly low = new Set<string>();
  private readonly needsReset = new Set<string>();
  /** Carries an entity past its fence when the database went back; shared with the fence check. */
  readonly carrier: FenceCarrier;
  private readonly inflight = new Map<string, Promise<void>>();
  /** Why the last refill of an entity failed; cleared by the next one that completes. */
  private readonly failures = new Map<string, Error>();
  private readonly ticker: Periodic;
  private readonly sweeper: Periodic;
  private lastEpoch: string | undefined;
  /** Which pools each sweep reads: those taken from in the last ACTIVE_MS, and SWEEP_IDLE_BATCH more going round. */
  private readonly sweepRound: ActivityRound<string>;
  /** Each pool's take total at its last read: a change makes it active. */
  private readonly lastTaken = new Map<string, number>();
  /** When each entity's pool was last checked by a tick (monotonic ms), for its `interval`. */
  private readonly lastChecked = new Map<string, number>();
  /** Between start() and stop(): a finished refill starts the next waiting one. */
  private ticking = false;
  /** When (monotonic) the numbers layer next has an entity due (`PeriodPools.due`): the ticker wakes for it. */
  private periodsDueAt = Infinity;
  private readonly failureLog: RepeatLimiter;
  readonly stats = { refills: 0, segmentsReserved: 0, fenceRefusals: 0 };

  constructor(private readonly options: RefillerOptions) {
    this.carrier = new FenceCarrier(options);
    this.failureLog = new RepeatLimiter(options.clock, LOOP_FAILURE_LIMITS);
    this.sweepRound = new ActivityRound({
      list: () => this.pooledKeys(),
      keyOf: (key) => key,
      lookup: (key) => (options.entities.get(key) ? key : undefined),
      idleBatch: SWEEP_IDLE_BATCH,
      activeBatch: SWEEP_BATCH,
      activeMs: ACTIVE_MS,
      now: () => options.clock.monotonic(),
    });
    // With no entity marked low it waits (IDLE_TICK_MS at most): an idle instance does not wake ten times a second.
    this.ticker = every(
      () =>
        Math.max(
          0,
          Math.min(this.low.size ? options.intervalMs : IDLE_TICK_MS, this.periodsDueAt - options.clock.monotonic()),
        ),
      () => this.tick(),
      options.clock,
    );
    this.sweeper = every(options.sweepMs ?? 1000, () => this.sweep(), options.clock);
  }

  /** Sweeps now, then ticks every `intervalMs` and sweeps every `sweepMs`. */
  start(): void {
    this.ticking = true;
    this.ticker.start();
    this.sweeper.start();
    void this.sweeper.runNow();
  }

  /** Stops ticking and waits for refills under way. */
  async stop(): Promise<void> {
    this.ticking = false;
    await Promise.all([this.ticker.stop(), this.sweeper.stop()]);
    await Promise.allSettled([...this.inflight.values()]);
  }

  /** The pool is below its watermark or needs a reset; the first entity marked wakes the ticker. */
  markLow(entityKey: string): void {
    if (this.low.has(entityKey)) return;
    this.low.add(entityKey);
    if (this.low.size === 1) this.ticker.wake();
  }

  /** Ids were taken from the pool here: it is read every sweep from the next one on. */
  touch(entityKey: string): void {
    this.sweepRound.touch(entityKey);
  }

  /** The pool was filled in another Redis epoch: discard it before refilling. */
  markReset(entityKey: string): void {
    this.needsReset.add(entityKey);
    this.markLow(entityKey);
  }

  /** Refills one entity now if below its watermark or `atLeast` (or returns the refill of it under way here). */
  refill(entityKey: string, atLeast = 0): Promise<void> {
    const current = this.inflight.get(entityKey);
    if (current) return current;
    const run = this.refillOnce(entityKey, atLeast)
      .then(
        () => void this.failures.delete(entityKey),
        (err: unknown) => {
          this.failures.set(entityKey, err instanceof Error ? err : new Error(String(err)));
          this.logError(entityKey, err);
        },
      )
      .finally(() => {
        this.inflight.delete(entityKey);
        // A slot is free: the next entity waiting starts now, not at the next tick.
        if (this.ticking) this.tick();
      });
    this.inflight.set(entityKey, run);
    return run;
  }

  lastFailure(entityKey: string): Error | undefined {
    return this.failures.get(entityKey);
  }

  /** Refills entities marked low, MAX_REFILLS_IN_FLIGHT at most, each once per `interval` (a short take's refill() is unpaced). */
  private tick(): void {
    const now = this.options.clock.monotonic();
    if (this.options.periods) {
      // A boundary, the next period's lead or a fence check of a business-number entity: refilled whatever its level.
      const due = this.options.periods.due(this.numberKeys());
      for (const key of due.keys) this.low.add(key);
      this.periodsDueAt = now + due.waitMs;
    }
    for (const key of this.low) {
      if (this.inflight.size >= MAX_REFILLS_IN_FLIGHT) return;
      const last = this.lastChecked.get(key);
      if (last !== undefined && now - last < (this.options.entities.get(key)?.interval ?? 0)) continue;
      this.low.delete(key);
      this.lastChecked.set(key, now);
      void this.refill(key);
    }
  }

  /** Below this many ready ids the entity's pool is refilled (it moves with demand). */
  lowWatermark(entity: EntityConfig): number {
    return this.sizing(entity).lowWatermark;
  }

  /** The pool's figures by demand; a business-number entity's within its period's cap. */
  private sizing(entity: EntityConfig): PoolSizing {
    const { periods } = this.options;
    return this.options.demand.sizing(entity, entity.numbers && periods ? periods.cap(entity) : undefined);
  }

  /** Every entity whose ids wait in a pool: segment ones, and business-number ones with the numbers layer. */
  private pooledKeys(): string[] {
    const { entities, periods } = this.options;
    return periods ? [...entities.segmentKeys(), ...this.numberKeys()] : entities.segmentKeys();
  }

  private numberKeys(): string[] {
    return this.options.entities.numberKeys?.() ?? [];
  }

  /** Notices a changed Redis epoch (every pool reset) and reads a batch of levels: take rates, and pools drained by direct pops. */
  async sweep(): Promise<void> {
    try {
      const epoch = await this.options.store.epoch();
      if (epoch !== this.lastEpoch) {
        // First sweep: claim every pool for this epoch (a no-op where it already is) before a push is refused.
        if (this.lastEpoch !== undefined) this.options.events.epochChanged(this.lastEpoch, epoch);
        for (const key of this.pooledKeys()) this.markReset(key);
      }
      this.lastEpoch = epoch;
      // A reset that could not run (a restarted Redis answers INFO while still loading and refuses the lock) is retried each sweep.
      for (const key of this.needsReset) this.markLow(key);
      // This sweep's pools; when a round starts, the take totals of entities gone from the registry are forgotten.
      const { items: keys, listed, rounds } = this.sweepRound.next();
      if (listed) {
        const live = new Set(listed);
        for (const key of this.lastTaken.keys()) if (!live.has(key)) this.lastTaken.delete(key);
      }
      const readAt = this.options.clock.now();
      const levels = await this.options.store.levels(keys);
      const read = new Map<string, PoolLevel>();
      // One entity's error (its keys, its Cluster node, an odd number) is logged with its key; the rest go on.
      keys.forEach((key, i) => {
        try {
          const level = levels[i];
          if (level instanceof Error) throw level;
          const entity = this.options.entities.get(key);
          if (!entity) return;
          read.set(key, level);
          this.options.demand.observe(key, level.taken);
          const before = this.lastTaken.get(key);
          if (before !== undefined && before !== level.taken) this.sweepRound.touch(key);
          this.lastTaken.set(key, level.taken);
          if (level.size < this.lowWatermark(entity)) this.markLow(key);
        } catch (err) {
          this.logError(key, err);
        }
      });
      this.options.events.levelsRead?.(read, rounds * (this.options.sweepMs ?? 1000), readAt);
    } catch (err) {
      this.logError('*', err);
    }
  }

  private async refillOnce(entityKey: string, atLeast: number): Promise<void> {
    const entity = this.options.entities.get(entityKey);
    if (!entity || entity.mode === 'snowflake' || entity.gapless) {
      this.needsReset.delete(entityKey);
      return;
    }
    // A held entity's pool stays empty (nothing may serve it) and its reset waits for the release: one registered held
    // (an import) has no epoch marker yet, so a push before the reset is refused.
    if (entity.held) return;
    let held = await this.options.lock.acquire(entityKey);
    // After a failover a replicated lock of a refill under way would block the entity for its TTL.
    if (!held && this.needsReset.has(entityKey) && (await this.options.store.unlockStale(entityKey)))
      held = await this.options.lock.acquire(entityKey);
    if (!held) return;
    try {
      // Business numbers: demand read as a segment pool's; the numbers layer fills, and handles an epoch change.
      if (entity.numbers) {
        this.needsReset.delete(entityKey);
        await this.observeLevel(entityKey);
        await this.options.periods?.fill(entity, atLeast, this.sizing(entity));
        this.stats.refills++;
        return;
      }
      // Three rounds at most: a push refused for an epoch change resets the pool, one refused for a database behind the
      // fence carries the offset past it; the next round reserves above.
      for (let round = 0; round < 3; round++) {
        if (this.needsReset.has(entityKey)) await this.reset(entityKey);
        const { size } = await this.observeLevel(entityKey);
        if (size >= this.lowWatermark(entity) && size >= atLeast) return;
        const steps = Math.max(
          1,
          Math.floor((this.options.demand.target(entity) - size) / entity.step),
          Math.ceil((atLeast - size) / entity.step),
        );
        const numbers = steps * entity.step;
        const started = this.options.clock.monotonic();
        const segment = await this.options.allocator.reserve(entityKey, numbers);
        this.stats.segmentsReserved += steps;
        await this.options.beforePush?.(entityKey, segment);
        const outcome = await pushSegment(this.options.store, this.options.stride, entity, segment, this.stats);
        this.stats.refills++;
        this.options.events.refilled(entityKey, (this.options.clock.monotonic() - started) / 1000, steps, numbers);
        if (outcome === 'ok') {
          this.carrier.caughtUp(entityKey);
          return;
        }
        if (outcome === 'epoch_changed') this.needsReset.add(entityKey);
        // Fenced: a database behind is carried past; else this push was stale (stalled past its lock TTL, or retried).
        else if (!(await this.carrier.carryIfBehind(entityKey, segment))) {
          this.options.events.fenceRefused(entityKey, segment.start, segment.end);
          return;
        }
      }
    } finally {
      await held.release();
    }
  }

  private async observeLevel(entityKey: string): Promise<PoolLevel> {
    const [level] = await this.options.store.levels([entityKey]);
    if (level instanceof Error) throw level;
    this.options.demand.observe(entityKey, level.taken);
    return level;
  }

  /**
   * Raises an entity's line to `atLeast` (an import found the old service issued further): the database first, then
   * the pool discarded and fenced at the line even if already past (it may hold ids below), so no older segment is
   * pushed. Resolves to the next unreserved number.
   */
  async raise(entityKey: string, atLeast: bigint): Promise<bigint> {
    const next = await this.options.allocator.raise(entityKey, atLeast);
    await this.options.store.raiseFence(entityKey, this.issuedUpTo(entityKey, next));
    return next;
  }

  /** The highest id a line whose next unreserved number is `next` may have issued (-1: none). */
  private issuedUpTo(entityKey: string, next: bigint): bigint {
    const entity = this.options.entities.get(entityKey);
    const stride = entity ? this.options.stride.of(entity) : this.options.stride;
    return next > 0n ? stride.toId(next - 1n) : -1n;
  }

  /** Discards a pool that may hold issued ids, fencing at what the database says may be issued. */
  private async reset(entityKey: string): Promise<void> {
    const issuedUpTo = this.issuedUpTo(entityKey, await this.options.allocator.peek(entityKey));
    if (await this.options.store.reset(entityKey, issuedUpTo)) this.options.events.poolDiscarded(entityKey, issuedUpTo);
    this.needsReset.delete(entityKey);
  }

  /** Logs a refill or sweep failure with its entity's key (each key once a minute, ten lines a second in all). */
  private logError(entityKey: string, err: unknown): void {
    this.options.events.failed(entityKey);
    const repeated = this.failureLog.admit(entityKey);
    if (repeated === undefined) return;
    this.options.log.error(withRepeated({ entityKey, err: errorMessage(err) }, repeated), 'refill failed');
  }
}
