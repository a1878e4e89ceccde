import type { EntityConfig } from '../entities/entity';
import type { Clock } from '../clock';

/** What sizing a pool needs to know of its entity. */
export type SizedEntity = Pick<EntityConfig, 'key' | 'step' | 'maxSizePerTimes' | 'maxPoolSize' | 'minSizePercent'>;

/** A pool's figures: what a refill fills to, below what it refills, the most it holds. */
export interface PoolSizing {
  readonly target: number;
  readonly lowWatermark: number;
  readonly max: number;
}

export interface DemandOptions {
  clock: Clock;
  /** Seconds of recent peak demand a pool holds (IDPOOL_POOL_HORIZON_S). */
  horizonSeconds: number;
}

/** The peak's half-life: a bursty entity keeps its depth between bursts minutes apart, a quiet one nears its floor in an hour. */
const HALF_LIFE_MS = 300_000;

/** A rate is measured over at least this long (2.5 refill ticks): refills 10 ms apart would make one batch a huge rate. */
const MIN_WINDOW_MS = 250;
/** …and at most this long: a floor drained after minutes idle counts as drained within 10 s, erring towards a deeper pool. */
const MAX_WINDOW_MS = 10_000;

interface Seen {
  /** Running total of ids taken, at `at` (monotonic ms). */
  taken: number;
  at: number;
  /** Highest rate seen (ids/s), at `peakAt`; it decays from there. */
  peak: number;
  peakAt: number;
}

/** Pools sized by demand (docs/design.md): horizon × recent peak take rate (direct pops too), in [floor, maxPoolSize]. */
export class Demand {
  private readonly seen = new Map<string, Seen>();

  constructor(private readonly options: DemandOptions) {}

  /** Records an entity's running total of ids taken (a lower total means its pool was reset: a new baseline). */
  observe(entityKey: string, taken: number): void {
    const now = this.options.clock.monotonic();
    const prev = this.seen.get(entityKey);
    if (!prev || taken < prev.taken) {
      this.seen.set(entityKey, { taken, at: now, peak: prev ? this.peakNow(prev, now) : 0, peakAt: now });
      return;
    }
    const elapsed = now - prev.at;
    const rate = ((taken - prev.taken) * 1000) / Math.min(MAX_WINDOW_MS, Math.max(MIN_WINDOW_MS, elapsed));
    const peak = this.peakNow(prev, now);
    const next: Seen = rate > peak ? { ...prev, peak: rate, peakAt: now } : prev;
    // Keep the old baseline until a full window has passed, so short intervals add up instead of each being inflated.
    if (elapsed >= MIN_WINDOW_MS) Object.assign(next, { taken, at: now });
    this.seen.set(entityKey, next);
  }

  /** Recent peak take rate of an entity, ids per second (decayed to now). */
  peakRate(entityKey: string): number {
    const seen = this.seen.get(entityKey);
    return seen ? this.peakNow(seen, this.options.clock.monotonic()) : 0;
  }

  /** Ids the pool should hold after a refill. */
  target(entity: SizedEntity): number {
    const floor = Math.max(entity.step, entity.maxSizePerTimes);
    const wanted = Math.ceil(this.options.horizonSeconds * this.peakRate(entity.key));
    return Math.min(entity.maxPoolSize, Math.max(floor, wanted));
  }

  /** Below this many ready ids the pool is refilled (`target · minSizePercent / 100`). */
  lowWatermark(entity: SizedEntity): number {
    return this.sizing(entity).lowWatermark;
  }

  /** The pool's figures within `cap` (a business-number period's, `NumberScheme.poolCap`). */
  sizing(entity: SizedEntity, cap = entity.maxPoolSize): PoolSizing {
    const max = Math.min(cap, entity.maxPoolSize);
    const target = Math.min(max, this.target(entity));
    return { target, lowWatermark: Math.floor((target * entity.minSizePercent) / 100), max };
  }

  /** Drops what is known of a retired entity. */
  forget(entityKey: string): void {
    this.seen.delete(entityKey);
  }

  private peakNow(seen: Seen, now: number): number {
    return seen.peak * 2 ** (-(now - seen.peakAt) / HALF_LIFE_MS);
  }
}
