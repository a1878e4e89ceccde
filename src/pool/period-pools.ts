import type { EntityConfig } from '../entities/entity';

/** A pool's figures from demand ({@link Demand.sizing}): what a refill fills to, below what it refills, the most it holds. */
export interface PoolSizing {
  readonly target: number;
  readonly lowWatermark: number;
  readonly max: number;
}

/**
 * What the refiller and the dispatcher ask of an entity whose pool is kept
 * per period (a business-number entity: `numbers`), so that one take loop
 * and one refill tick serve it as they serve a segment pool: the numbers
 * layer (`number-periods.ts`) answers which period a pool holds (by the
 * Redis clock), fills it from the period's counter, and says why a take
 * ran short.
 */
export interface PeriodPools {
  /** Most numbers of one period kept ready: the cap on the pool's demand sizing (`NumberScheme.poolCap`). */
  cap(entity: EntityConfig): number;
  /**
   * Fills now's period (and the next, ahead of its boundary) towards
   * `sizing`, at least `need` of now's; the caller holds the entity's
   * refill lock.
   */
  fill(entity: EntityConfig, need: number, sizing: PoolSizing): Promise<void>;
  /**
   * After a short take: true when `count` are ready now (a period that just
   * began went live); throws the period's refusal (short, exhausted, a
   * Redis clock behind); false when a refill is what it needs.
   */
  afterShort(entity: EntityConfig, count: number): Promise<boolean>;
  /**
   * Of `keys`, those due a refill now whatever their level (a boundary came,
   * the next period's lead began, a fence check is due), and the ms until
   * the next such moment.
   */
  due(keys: readonly string[]): { keys: string[]; waitMs: number };
}
