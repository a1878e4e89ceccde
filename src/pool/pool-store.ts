import type { TakenIds } from './taken-ids';

/** Outcome of taking ids from a pool. */
export type TakeResult =
  | { readonly kind: 'ok'; readonly ids: TakenIds; readonly remaining: number }
  /** Fewer than `count` ready; nothing was taken. */
  | { readonly kind: 'short'; readonly size: number }
  /** The pool was filled in another Redis epoch and must be reset first. */
  | { readonly kind: 'epoch_changed' }
  | { readonly kind: 'rate_limited'; readonly retryAfterMs: number };

export type PushResult =
  | { readonly kind: 'ok'; readonly size: number }
  /** Refused: the segment does not start above the fence. */
  | { readonly kind: 'fenced' }
  | { readonly kind: 'epoch_changed' };

/** How full a pool is, and how many ids were ever taken from it (by takes and direct pops) since it was last reset. */
export interface PoolLevel {
  readonly size: number;
  readonly taken: number;
}

/** The ids of one push, in pool order: numbers where every id is below 2^53 (IdStride.pushIds), decimal strings beyond. */
export type PushIds = Float64Array | readonly string[];

/** Ready ids of every entity: decimal strings, as Redis stores them and the wire carries them ({@link PushIds}, {@link TakenIds}). */
export interface PoolStore {
  /** Short name for logs and health: `redis` or `memory`. */
  readonly kind: 'redis' | 'memory';
  /** Takes `count` ids, all or nothing, within `maxPerSecond` (0 = unlimited). */
  take(entityKey: string, count: number, maxPerSecond: number): Promise<TakeResult>;
  /** Appends ids (in take order) whose lowest and highest are given, if above the fence. */
  push(entityKey: string, ids: PushIds, lowest: bigint, highest: bigint): Promise<PushResult>;
  size(entityKey: string): Promise<number>;
  /** The id the next take would hand out (the pool's head, its lowest: pushes only go above the fence); undefined when empty. */
  next(entityKey: string): Promise<bigint | undefined>;
  /** Sizes of many pools in one round trip; a failed pool's (or node's) Error in its place; a lost connection rejects. */
  sizes(entityKeys: readonly string[]): Promise<(number | Error)[]>;
  /** Sizes and running take totals of many pools in one round trip (demand is measured from these); errors as in `sizes`. */
  levels(entityKeys: readonly string[]): Promise<(PoolLevel | Error)[]>;
  /** Discards a pool of another Redis epoch, raising its fence to `issuedUpTo`; false when it already was of this epoch. */
  reset(entityKey: string, issuedUpTo: bigint): Promise<boolean>;
  /** Drops a refill lock left from an earlier Redis epoch (its holder's server is gone); true when one was dropped. */
  unlockStale(entityKey: string): Promise<boolean>;
  /** Drops a retired entity's ready ids (its fence stays). */
  discard(entityKey: string): Promise<void>;
  /** Drops the ready ids and raises the fence to `below` at once (`Refiller.raise`): no segment reserved before is pushed after. */
  raiseFence(entityKey: string, below: bigint): Promise<void>;
  /** The highest id ever pushed for the entity (its fence), if any. */
  fence(entityKey: string): Promise<bigint | undefined>;
  /** The fences of many entities in one round trip per node; errors as in `sizes`. */
  fences(entityKeys: readonly string[]): Promise<(bigint | undefined | Error)[]>;
  /** Epoch of the server answering now (`run_id:master_replid`); changes on restart, promotion and failback. */
  epoch(): Promise<string>;
  /** Answers when the store is usable (readiness). */
  ping(): Promise<void>;
}

/** A held refill lock (on Redis, a lease its holder extends until released). */
export interface HeldLock {
  release(): Promise<void>;
}

/** Per-entity refill lock; `acquire` returns null when someone else holds it. */
export interface RefillLock {
  acquire(entityKey: string): Promise<HeldLock | null>;
}
