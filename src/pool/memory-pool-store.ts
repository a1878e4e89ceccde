import type { Clock } from '../clock';
import type { HeldLock, PoolLevel, PoolStore, PushIds, TakeResult, PushResult, RefillLock } from './pool-store';
import { PerSecondLimiter } from './rate-limit';
import { listedIds } from './taken-ids';

/** One entity's ready ids: pushed segments in order, consumed from the head. */
class EntityPool {
  readonly chunks: (readonly string[])[] = [];
  head = 0;
  size = 0;
  /** Ids ever taken (every take), for the demand that sizes the pool. */
  taken = 0;
  fence: bigint | null = null;
  /** A business-number pool's period end (Unix ms): its numbers go when the clock reaches it, as Redis expires the list. */
  end: number | undefined;

  clear(): void {
    this.chunks.length = 0;
    this.head = 0;
    this.size = 0;
  }

  ready(): string[] {
    return this.chunks.flatMap((chunk, i) => (i === 0 ? chunk.slice(this.head) : chunk));
  }

  take(count: number): string[] {
    const out: string[] = [];
    while (out.length < count) {
      const chunk = this.chunks[0];
      const n = Math.min(count - out.length, chunk.length - this.head);
      for (let i = 0; i < n; i++) out.push(chunk[this.head + i]);
      this.head += n;
      if (this.head === chunk.length) {
        this.chunks.shift();
        this.head = 0;
      }
    }
    this.size -= count;
    this.taken += count;
    return out;
  }
}

/** In-process pool (embedded mode): the Redis store's rules, without epochs (the pool dies with the process). */
export class MemoryPoolStore implements PoolStore {
  readonly kind = 'memory' as const;
  private readonly pools = new Map<string, EntityPool>();
  private readonly rate: PerSecondLimiter;

  constructor(private readonly clock: Pick<Clock, 'now'>) {
    this.rate = new PerSecondLimiter(clock);
  }

  private pool(entityKey: string): EntityPool {
    const pool = this.live(entityKey) ?? new EntityPool();
    this.pools.set(entityKey, pool);
    return pool;
  }

  /** The entity's pool, a business-number period's emptied once the clock has passed its end. */
  private live(entityKey: string): EntityPool | undefined {
    const pool = this.pools.get(entityKey);
    if (pool?.end !== undefined && this.clock.now() >= pool.end) {
      pool.clear();
      pool.end = undefined;
    }
    return pool;
  }

  /**
   * Appends numbers of the period ending at `end`, emptying one of another period. No fence: each period's counter is
   * checked against the high-water record when it reserves.
   */
  pushPeriod(entityKey: string, numbers: readonly string[], end: number): void {
    const pool = this.pool(entityKey);
    if (pool.end !== end) pool.clear();
    pool.end = end;
    if (numbers.length === 0) return;
    pool.chunks.push(numbers);
    pool.size += numbers.length;
  }

  /** The numbers of the period ending at `end` waiting in take order (none when the pool holds another period). */
  periodReady(entityKey: string, end: number): string[] {
    const pool = this.live(entityKey);
    return pool?.end === end ? pool.ready() : [];
  }

  /** Keeps only `kept` of the period ending at `end` (a raise), in take order. */
  keepInPeriod(entityKey: string, end: number, kept: readonly string[]): void {
    const pool = this.live(entityKey);
    if (pool?.end !== end) return;
    pool.clear();
    this.pushPeriod(entityKey, kept, end);
  }

  async take(entityKey: string, count: number, maxPerSecond: number): Promise<TakeResult> {
    const pool = this.pool(entityKey);
    // The checks of _prelude.lua's refuseTake, in its order: the limit, then the pool.
    const window = this.rate.window(entityKey, count, maxPerSecond);
    if (window.kind === 'rate_limited') return window;
    if (pool.size < count) return { kind: 'short', size: pool.size };
    window.count();
    return { kind: 'ok', ids: listedIds(pool.take(count)), remaining: pool.size };
  }

  async push(entityKey: string, ids: PushIds, lowest: bigint, highest: bigint): Promise<PushResult> {
    const pool = this.pool(entityKey);
    if (pool.fence !== null && lowest <= pool.fence) return { kind: 'fenced' };
    pool.chunks.push(ids instanceof Float64Array ? Array.from(ids, String) : ids);
    pool.size += ids.length;
    pool.fence = highest;
    return { kind: 'ok', size: pool.size };
  }

  async size(entityKey: string): Promise<number> {
    return this.live(entityKey)?.size ?? 0;
  }

  async next(entityKey: string): Promise<bigint | undefined> {
    const pool = this.live(entityKey);
    if (!pool || pool.size === 0) return undefined;
    return BigInt(pool.chunks[0][pool.head]);
  }

  async sizes(entityKeys: readonly string[]): Promise<(number | Error)[]> {
    return entityKeys.map((key) => this.live(key)?.size ?? 0);
  }

  async levels(entityKeys: readonly string[]): Promise<(PoolLevel | Error)[]> {
    return entityKeys.map((key) => {
      const pool = this.live(key);
      return { size: pool?.size ?? 0, taken: pool?.taken ?? 0 };
    });
  }

  async reset(entityKey: string, issuedUpTo: bigint): Promise<boolean> {
    // No epochs here, so nothing to discard; the fence still starts at what may be issued.
    const pool = this.pool(entityKey);
    if (pool.fence === null || issuedUpTo > pool.fence) pool.fence = issuedUpTo >= 0n ? issuedUpTo : null;
    return false;
  }

  async fence(entityKey: string): Promise<bigint | undefined> {
    return this.pools.get(entityKey)?.fence ?? undefined;
  }

  async fences(entityKeys: readonly string[]): Promise<(bigint | undefined | Error)[]> {
    return entityKeys.map((key) => this.pools.get(key)?.fence ?? undefined);
  }

  /** The in-process pool has no epochs: a lock never outlives its server. */
  async unlockStale(): Promise<boolean> {
    return false;
  }

  async raiseFence(entityKey: string, below: bigint): Promise<void> {
    await this.discard(entityKey);
    const pool = this.pool(entityKey);
    if (pool.fence === null || below > pool.fence) pool.fence = below;
  }

  async discard(entityKey: string): Promise<void> {
    this.pools.get(entityKey)?.clear();
  }

  async epoch(): Promise<string> {
    return 'memory';
  }

  async ping(): Promise<void> {
    // Always reachable: it lives in this process.
  }
}

/** In-process refill lock; a release frees only its own hold (a late second one must not free the next holder's). */
export class MemoryRefillLock implements RefillLock {
  private readonly held = new Map<string, object>();

  async acquire(entityKey: string): Promise<HeldLock | null> {
    if (this.held.has(entityKey)) return null;
    const token = {};
    this.held.set(entityKey, token);
    return {
      release: async () => {
        if (this.held.get(entityKey) === token) this.held.delete(entityKey);
      },
    };
  }
}
