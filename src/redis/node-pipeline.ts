import calculateSlot from 'cluster-key-slot';
import { Cluster, type ChainableCommander } from 'ioredis';
import type { RedisClient } from './connection';

/**
 * Queues `build(pipeline, i)` for every `i` of `slotKeys` in one pipeline per node owning their slots (a
 * Cluster refuses one spanning nodes), sent in parallel; returns each `i`'s replies, in order.
 */
export async function pipelinePerNode(
  redis: RedisClient,
  slotKeys: readonly string[],
  build: (pipeline: ChainableCommander, i: number) => void,
): Promise<(unknown[] | Error)[]> {
  const groups = new Map<string, number[]>();
  slotKeys.forEach((key, i) => {
    // ioredis accepts a pipeline whose keys' slots all map to one group of nodes (a master and its replicas).
    const node = redis instanceof Cluster ? (redis.slots[calculateSlot(key)]?.join(',') ?? '?') : '';
    const group = groups.get(node);
    if (group) group.push(i);
    else groups.set(node, [i]);
  });
  const out = new Array<unknown[] | Error>(slotKeys.length);
  const settled = await Promise.allSettled(
    [...groups.values()].map(async (indexes) => {
      const pipeline = redis.pipeline();
      for (const i of indexes) build(pipeline, i);
      try {
        const results = (await pipeline.exec()) ?? [];
        const perKey = results.length / indexes.length;
        indexes.forEach((keyIndex, n) => {
          const replies = results.slice(n * perKey, (n + 1) * perKey);
          out[keyIndex] = replies.find(([err]) => err)?.[0] ?? replies.map(([, value]) => value);
        });
      } catch (err) {
        // This node group failed (a Cluster node down): its keys carry the error, the other groups' keys their replies.
        for (const i of indexes) out[i] = err instanceof Error ? err : new Error(String(err));
        throw err;
      }
    }),
  );
  // With every group failed the connection itself is gone: that is the caller's failure, not one entity's.
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed && settled.every((r) => r.status === 'rejected')) throw failed.reason;
  return out;
}
