import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Lock, Redlock } from '@sesamecare-oss/redlock';
import type Redis from 'ioredis';
import type { ClusterMap } from '../segment/cluster';
import { entityKeys, DEFAULT_PREFIX } from './keys';
import type { HeldLock, PoolStore, PopResult, PushResult, RefillLock } from './pool-store';

/** Return codes of the Lua functions in `commands/` (negative = refused). */
export enum ScriptCode {
  Ok = 0,
  Short = -1,
  ServerChanged = -2,
  RateLimited = -3,
  Fenced = -4,
}

const COMMANDS_DIR = join(__dirname, 'commands');

/**
 * idpool's Redis function library: `_prelude.lua` followed by every
 * `<name>-<numKeys>.lua` in `commands/` (each registers one function).
 */
export function functionLibrary(): string {
  const files = readdirSync(COMMANDS_DIR)
    .filter((f) => f.endsWith('.lua') && f !== '_prelude.lua')
    .sort();
  return [readFileSync(join(COMMANDS_DIR, '_prelude.lua'), 'utf8'), ...files.map((f) => readFileSync(join(COMMANDS_DIR, f), 'utf8'))].join('\n');
}

/** Loads (or replaces) idpool's functions: the service's own and `idpool_pop` for trusted consumers. */
export async function loadFunctions(redis: Redis): Promise<void> {
  const library = functionLibrary();
  // Already loaded (another instance, an earlier start): nothing to write.
  // A server over maxmemory refuses FUNCTION LOAD, and must not stop an
  // instance from starting to serve what its pools hold.
  const loaded = (await redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'idpool', 'WITHCODE')) as unknown[][];
  const entry = loaded.find((l) => l[1] === 'idpool');
  if (entry && entry[entry.indexOf('library_code') + 1] === library) return;
  await redis.call('FUNCTION', 'LOAD', 'REPLACE', library);
}

/**
 * The epoch `run_id:master_replid` (DESIGN.md invariant 4) from the text of
 * `INFO server replication`: the same string the Lua functions compare.
 */
export function epochOf(info: string): string {
  const runId = /run_id:([0-9a-f]+)/.exec(info)?.[1];
  const replId = /master_replid:([0-9a-f]+)/.exec(info)?.[1];
  if (!runId || !replId) throw new Error('INFO did not report run_id and master_replid');
  return `${runId}:${replId}`;
}

function pushResult(code: number): PushResult {
  if (code === ScriptCode.ServerChanged) return { kind: 'server_changed' };
  if (code === ScriptCode.Fenced) return { kind: 'fenced' };
  return { kind: 'ok', size: code };
}

/** Service-mode pool: one Redis list per entity, shared by every instance and direct consumers. */
export class RedisPoolStore implements PoolStore {
  readonly kind = 'redis' as const;

  constructor(
    private readonly redis: Redis,
    private readonly prefix = DEFAULT_PREFIX,
  ) {}

  /**
   * FCALL, reloading the library once if it is missing (FUNCTION FLUSH, or a
   * server that came up empty): the library is ours to restore.
   */
  private async fcall<T>(name: string, keys: string[], args: Array<string | number>): Promise<T> {
    try {
      return (await this.redis.fcall(name, keys.length, ...keys, ...args)) as T;
    } catch (err) {
      if (!/Function not found/i.test(String((err as Error)?.message))) throw err;
      await loadFunctions(this.redis);
      return (await this.redis.fcall(name, keys.length, ...keys, ...args)) as T;
    }
  }

  async pop(entityKey: string, count: number, maxPerSecond: number): Promise<PopResult> {
    const k = entityKeys(entityKey, this.prefix);
    const [code, value, joined] = await this.fcall<[number, number, string?]>('idpool_take', [k.ids, k.server, k.ratePrefix], [count, maxPerSecond]);
    switch (code) {
      case ScriptCode.Ok:
        return { kind: 'ok', ids: joined!.split(','), remaining: value };
      case ScriptCode.Short:
        return { kind: 'short', size: value };
      case ScriptCode.ServerChanged:
        return { kind: 'server_changed' };
      case ScriptCode.RateLimited:
        return { kind: 'rate_limited', retryAfterMs: value };
      default:
        throw new Error(`idpool_take returned unknown code ${code}`);
    }
  }

  async push(entityKey: string, ids: string[], lowest: bigint, highest: bigint): Promise<PushResult> {
    const k = entityKeys(entityKey, this.prefix);
    return pushResult(await this.fcall<number>('idpool_push', [k.ids, k.fence, k.server], [lowest.toString(), highest.toString(), ...ids]));
  }

  async pushRange(entityKey: string, start: bigint, end: bigint, cluster: ClusterMap): Promise<PushResult> {
    const k = entityKeys(entityKey, this.prefix);
    const lowest = cluster.toId(start);
    const highest = cluster.toId(end - 1n);
    if (highest > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('pushRange is only for ids below 2^53');
    const code = await this.fcall<number>('idpool_push_range', [k.ids, k.fence, k.server], [lowest.toString(), highest.toString(), start.toString(), Number(end - start), cluster.count, cluster.index]);
    return pushResult(code);
  }

  size(entityKey: string): Promise<number> {
    return this.redis.llen(entityKeys(entityKey, this.prefix).ids);
  }

  async sizes(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.llen(entityKeys(key, this.prefix).ids);
    const results = (await pipeline.exec()) ?? [];
    return results.map(([err, n]) => {
      if (err) throw err;
      return Number(n);
    });
  }

  async reset(entityKey: string, issuedUpTo: bigint): Promise<boolean> {
    const k = entityKeys(entityKey, this.prefix);
    const fence = issuedUpTo >= 0n ? issuedUpTo.toString() : '';
    return (await this.fcall<number>('idpool_reset', [k.ids, k.fence, k.server], [fence])) === 1;
  }

  async discard(entityKey: string): Promise<void> {
    await this.redis.del(entityKeys(entityKey, this.prefix).ids);
  }

  async serverId(): Promise<string> {
    return epochOf(await this.redis.info('server', 'replication'));
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }
}

/** Refill lock on Redis (redlock, single instance): skip rather than queue when held. */
export class RedisRefillLock implements RefillLock {
  private readonly redlock: Redlock;

  constructor(
    redis: Redis,
    private readonly prefix = DEFAULT_PREFIX,
  ) {
    this.redlock = new Redlock([redis], { retryCount: 0, automaticExtensionThreshold: 500 });
    // Contention is expected (every instance ticks); it is not an error.
    this.redlock.on('error', () => undefined);
  }

  async acquire(entityKey: string, ttlMs: number): Promise<HeldLock | null> {
    let lock: Lock;
    try {
      lock = await this.redlock.acquire([entityKeys(entityKey, this.prefix).lock], ttlMs);
    } catch {
      return null;
    }
    return {
      release: async () => {
        // An expired lock cannot be released; the fence already guards what it pushed.
        await lock.release().catch(() => undefined);
      },
    };
  }
}
