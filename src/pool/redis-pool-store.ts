import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Lock, Redlock } from '@sesamecare-oss/redlock';
import type Redis from 'ioredis';
import type { Result } from 'ioredis';
import { entityKeys, DEFAULT_PREFIX } from './keys';
import type { HeldLock, PoolStore, PopResult, PushResult, RefillLock } from './pool-store';

/** Return codes of the Lua scripts in `commands/` (negative = refused). */
export enum ScriptCode {
  Ok = 0,
  Short = -1,
  ServerChanged = -2,
  RateLimited = -3,
  Fenced = -4,
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    idpoolPop(ids: string, server: string, ratePrefix: string, count: number, maxPerSecond: number): Result<[number, number, string[]?], Context>;
    idpoolPush(ids: string, fence: string, server: string, ...args: string[]): Result<number, Context>;
    idpoolReset(ids: string, fence: string, server: string, issuedUpTo: string): Result<number, Context>;
  }
}

const COMMANDS_DIR = join(__dirname, 'commands');

export function readScript(file: string): string {
  return readFileSync(join(COMMANDS_DIR, file), 'utf8');
}

/** Registers idpool's Lua scripts on a connection (EVALSHA with EVAL fallback). */
export function defineCommands(redis: Redis): void {
  if (typeof redis.idpoolPop === 'function') return;
  redis.defineCommand('idpoolPop', { numberOfKeys: 3, lua: readScript('pop-3.lua') });
  redis.defineCommand('idpoolPush', { numberOfKeys: 3, lua: readScript('push-3.lua') });
  redis.defineCommand('idpoolReset', { numberOfKeys: 3, lua: readScript('reset-3.lua') });
}

/** Loads (or replaces) the `idpool_pop` function trusted consumers call with FCALL. */
export async function loadConsumerFunctions(redis: Redis): Promise<void> {
  await redis.call('FUNCTION', 'LOAD', 'REPLACE', readScript('idpool-functions.lua'));
}

/** Service-mode pool: one Redis list per entity, shared by every instance and direct consumers. */
export class RedisPoolStore implements PoolStore {
  readonly kind = 'redis' as const;

  constructor(
    private readonly redis: Redis,
    private readonly prefix = DEFAULT_PREFIX,
  ) {
    defineCommands(redis);
  }

  async pop(entityKey: string, count: number, maxPerSecond: number): Promise<PopResult> {
    const k = entityKeys(entityKey, this.prefix);
    const [code, value, ids] = await this.redis.idpoolPop(k.ids, k.server, k.ratePrefix, count, maxPerSecond);
    switch (code) {
      case ScriptCode.Ok:
        return { kind: 'ok', ids: ids ?? [], remaining: value };
      case ScriptCode.Short:
        return { kind: 'short', size: value };
      case ScriptCode.ServerChanged:
        return { kind: 'server_changed' };
      case ScriptCode.RateLimited:
        return { kind: 'rate_limited', retryAfterMs: value };
      default:
        throw new Error(`pop-3.lua returned unknown code ${code}`);
    }
  }

  async push(entityKey: string, ids: string[], lowest: bigint, highest: bigint): Promise<PushResult> {
    const k = entityKeys(entityKey, this.prefix);
    const code = await this.redis.idpoolPush(k.ids, k.fence, k.server, lowest.toString(), highest.toString(), ...ids);
    if (code === ScriptCode.ServerChanged) return { kind: 'server_changed' };
    if (code === ScriptCode.Fenced) return { kind: 'fenced' };
    return { kind: 'ok', size: code };
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
    return (await this.redis.idpoolReset(k.ids, k.fence, k.server, fence)) === 1;
  }

  async discard(entityKey: string): Promise<void> {
    await this.redis.del(entityKeys(entityKey, this.prefix).ids);
  }

  async serverId(): Promise<string> {
    const info = await this.redis.info('server');
    const match = /run_id:([0-9a-f]+)/.exec(info);
    if (!match) throw new Error('INFO server did not report a run_id');
    return match[1];
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
