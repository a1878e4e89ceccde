import type { DatabaseBehindReport } from '../segment/high-water';
import type { PoolLevel } from './pool-store';

/** What the refiller reports as it works. */
export interface RefillEvents {
  /** A segment of `numbers` numbers (`steps` steps) was reserved and pushed in `seconds`. */
  refilled(entityKey: string, seconds: number, steps: number, numbers: number): void;
  fenceRefused(entityKey: string, start: bigint, end: bigint): void;
  poolDiscarded(entityKey: string, fence: bigint): void;
  /** A segment was refused because the database is behind the fence (restored, failed back); the entity was carried past it. */
  databaseBehind(report: DatabaseBehindReport): void;
  epochChanged(from: string, to: string): void;
  /** A sweep read these levels at `readAt` (wall ms; a round over every pool takes `roundMs`): the sampler reuses them. */
  levelsRead?(levels: ReadonlyMap<string, PoolLevel>, roundMs: number, readAt: number): void;
  /** A refill of `entityKey`, or a sweep (`'*'` when it failed for every pool), failed: called each time, though the log holds repeats back. */
  failed(entityKey: string): void;
}
