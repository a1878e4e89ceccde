import { callFunction, scriptOutcome } from '../redis/functions';
import { type WorkerKeys, workerKeys } from '../redis/keys';
import type { RedisClient } from '../redis/connection';
import type { Claimed, WorkerHolders } from './worker-holders';

/**
 * The worker leases' second record: a hash of holder tokens and a sorted set of ceilings under
 * `{workers}`, changed only by `worker_*-2.lua` functions, so a check and its write are one step.
 */
export class RedisWorkerHolders implements WorkerHolders {
  private readonly keys: WorkerKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = workerKeys(prefix);
  }

  async ceilings(workerIds: readonly number[]): Promise<Map<number, number>> {
    if (workerIds.length === 0) return new Map();
    const scores = await this.redis.zmscore(this.keys.ceilings, ...workerIds.map(String));
    return new Map(workerIds.flatMap((id, i) => (scores[i] === null ? [] : [[id, Number(scores[i])] as const])));
  }

  async claim(workerId: number, token: string, ceilingMs: number, lostToken = ''): Promise<Claimed> {
    const [previous, own] = await callFunction<[number, number]>(this.redis, 'idpool_worker_claim', this.fcallKeys(), [
      workerId,
      token,
      Math.floor(ceilingMs),
      lostToken,
    ]);
    return { previousCeilingMs: previous, own: own === 1 };
  }

  renew(workerId: number, token: string, ceilingMs: number): Promise<boolean> {
    return this.held('idpool_worker_renew', workerId, token, ceilingMs);
  }

  release(workerId: number, token: string, lastUsedMs: number): Promise<boolean> {
    return this.held('idpool_worker_release', workerId, token, lastUsedMs);
  }

  private async held(name: string, workerId: number, token: string, ms: number): Promise<boolean> {
    const code = await callFunction<number>(this.redis, name, this.fcallKeys(), [workerId, token, Math.floor(ms)]);
    return scriptOutcome(name, code, undefined, ['not_holder']).kind === 'ok';
  }

  private fcallKeys(): string[] {
    return [this.keys.holders, this.keys.ceilings];
  }
}
