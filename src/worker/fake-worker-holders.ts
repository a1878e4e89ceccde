import type { Claimed, WorkerHolders } from './worker-holders';

/** In-memory {@link WorkerHolders} with the Redis functions' semantics, for unit tests. */
export class FakeWorkerHolders implements WorkerHolders {
  readonly holders = new Map<number, string>();
  readonly ceilingOf = new Map<number, number>();
  /** Set to make the next calls fail like an unreachable Redis. */
  down = false;

  private check(): void {
    if (this.down) throw new Error('redis unreachable');
  }

  private raise(workerId: number, ceilingMs: number): void {
    this.ceilingOf.set(workerId, Math.max(this.ceilingOf.get(workerId) ?? -Infinity, Math.floor(ceilingMs)));
  }

  async ceilings(workerIds: readonly number[]): Promise<Map<number, number>> {
    this.check();
    return new Map([...this.ceilingOf].filter(([id]) => workerIds.includes(id)));
  }

  async claim(workerId: number, token: string, ceilingMs: number, lostToken = ''): Promise<Claimed> {
    this.check();
    const previousCeilingMs = this.ceilingOf.get(workerId) ?? 0;
    const own = lostToken !== '' && this.holders.get(workerId) === lostToken;
    this.holders.set(workerId, token);
    this.raise(workerId, ceilingMs);
    return { previousCeilingMs, own };
  }

  async renew(workerId: number, token: string, ceilingMs: number): Promise<boolean> {
    this.check();
    const holder = this.holders.get(workerId);
    if (holder !== undefined && holder !== token) return false;
    this.holders.set(workerId, token);
    this.raise(workerId, ceilingMs);
    return true;
  }

  async release(workerId: number, token: string, lastUsedMs: number): Promise<boolean> {
    this.check();
    if (this.holders.get(workerId) !== token) return false;
    this.holders.delete(workerId);
    this.ceilingOf.set(workerId, Math.floor(lastUsedMs));
    return true;
  }
}
