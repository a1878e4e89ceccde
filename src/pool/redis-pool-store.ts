import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ExecutionError, type Lock, Redlock, ResourceLockedError } from '@sesamecare-oss/redlock';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Command, type ChainableCommander } from 'ioredis';
import { type RedisClient, mastersOf } from './redis-connection';
import { type EntityKeys, entityKeys, DEFAULT_PREFIX } from './keys';
import type { HeldLock, PoolLevel, PoolStore, PushIds, TakeResult, PushResult, RefillLock } from './pool-store';
import { JoinedIds, joinedBytes, listedIds, type TakenIds } from './taken-ids';
import { errorMessage } from '../errors';

/** Return codes of the Lua functions in `commands/` (negative = refused). */
export enum ScriptCode {
  Ok = 0,
  Short = -1,
  EpochChanged = -2,
  RateLimited = -3,
  Fenced = -4,
}

const COMMANDS_DIR = join(__dirname, 'commands');

/**
 * idpool's Redis function library: `_prelude.lua` followed by every
 * `<name>-<numKeys>.lua` in `commands/` (each registers one function).
 */
function functionLibrary(): string {
  const files = readdirSync(COMMANDS_DIR)
    .filter((f) => f.endsWith('.lua') && f !== '_prelude.lua')
    .sort();
  return [
    readFileSync(join(COMMANDS_DIR, '_prelude.lua'), 'utf8'),
    ...files.map((f) => readFileSync(join(COMMANDS_DIR, f), 'utf8')),
  ].join('\n');
}

/**
 * Loads (or replaces) idpool's functions, the service's own and `idpool_pop`
 * for trusted consumers, on every master (a Cluster's too: a function runs
 * on the node that owns its keys; replicas get it by replication).
 */
export async function loadFunctions(redis: RedisClient): Promise<void> {
  const library = functionLibrary();
  await Promise.all(
    mastersOf(redis).map(async (node) => {
      // Already loaded (another instance, an earlier start): nothing to write.
      // A server over maxmemory refuses FUNCTION LOAD, and must not stop an
      // instance from starting to serve what its pools hold.
      const loaded = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'idpool', 'WITHCODE')) as unknown[][];
      const entry = loaded.find((l) => l[1] === 'idpool');
      if (entry?.[entry.indexOf('library_code') + 1] === library) return;
      await node.call('FUNCTION', 'LOAD', 'REPLACE', library);
    }),
  );
}

/**
 * Runs `call` (an FCALL, or a MULTI of them), loading the library and
 * running it once more if the server lacks it (FUNCTION FLUSH, or a server
 * that came up empty): the library is ours to restore.
 */
async function withLibrary<T>(redis: RedisClient, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!/Function not found/i.test(errorMessage(err))) throw err;
    await loadFunctions(redis);
    return call();
  }
}

/** FCALL of one of idpool's functions (see {@link withLibrary}). */
export function callFunction<T>(
  redis: RedisClient,
  name: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<T> {
  return withLibrary(redis, async () => (await redis.fcall(name, keys.length, ...keys, ...args)) as T);
}

/**
 * Queues `build(pipeline, i)` for every `i` of `slotKeys`, in one pipeline
 * per node, sent in parallel; returns each `i`'s replies, in order. A Cluster
 * refuses a pipeline whose keys live on different nodes, so the commands are
 * grouped by the master that owns `slotKeys[i]`'s slot; one server takes them
 * all in one pipeline.
 */
async function pipelinePerNode(
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

/**
 * The epoch `run_id:master_replid` (docs/design.md invariant 4) from the text of
 * `INFO server replication`: the same string the Lua functions compare.
 */
function epochOf(info: string): string {
  const runId = /run_id:([0-9a-f]+)/.exec(info)?.[1];
  const replId = /master_replid:([0-9a-f]+)/.exec(info)?.[1];
  if (!runId || !replId) throw new Error('INFO did not report run_id and master_replid');
  return `${runId}:${replId}`;
}

/**
 * The replies of a MULTI, in order; the first error among them is thrown.
 * A MULTI the server refused (EXECABORT) throws the first command's refusal
 * (READONLY, OOM, …), which says why.
 */
async function transaction(what: string, multi: ChainableCommander): Promise<unknown[]> {
  const replies = await multi.exec().catch((err: unknown) => {
    throw (err as { previousErrors?: unknown[] }).previousErrors?.[0] ?? err;
  });
  if (!replies) throw new Error(`the ${what} transaction was discarded`);
  const failed = replies.find(([err]) => err)?.[0];
  if (failed) throw failed;
  return replies.map(([, value]) => value);
}

function pushResult(code: number): PushResult {
  if (code === ScriptCode.EpochChanged) return { kind: 'epoch_changed' };
  if (code === ScriptCode.Fenced) return { kind: 'fenced' };
  return { kind: 'ok', size: code };
}

/** Writes `$n\r\n`, the header of a bulk string of n (< 100) bytes, at `at`; returns where it ends. */
function bulkHeader(wire: Buffer, at: number, n: number): number {
  wire[at++] = 36; // $
  if (n >= 10) wire[at++] = 48 + ((n / 10) | 0);
  wire[at++] = 48 + (n % 10);
  wire[at++] = 13;
  wire[at++] = 10;
  return at;
}

/** Powers of ten up to 10^16: DIGITS_ABOVE[d] is the least number of d + 1 digits. */
const DIGITS_ABOVE = Array.from({ length: 17 }, (_, d) => 10 ** d);

/**
 * `RPUSH key id …` with its bytes written here, once: ioredis builds a
 * command of 10,000 arguments by string concatenation and then encodes it
 * as UTF-8, which cost this process ~200 µs per 1,000 ids (CPU profile).
 * Ids below 2^53 come as numbers and their digits are written straight
 * from them; beyond, as decimal strings of at most 20 digits (idpool makes
 * them), copied byte by byte. ioredis itself subclasses Command this way
 * (its Script's EVALSHA), and writes a Buffer as it is.
 */
export class RpushIds extends Command {
  private readonly wire: Buffer;

  constructor(key: string, ids: PushIds) {
    super('rpush', [key]);
    const head = `*${ids.length + 2}\r\n$5\r\nrpush\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`;
    // `$NN\r\n` + at most 20 digits + `\r\n` an id.
    const wire = Buffer.allocUnsafe(Buffer.byteLength(head) + ids.length * 27);
    let at = wire.write(head, 0);
    if (ids instanceof Float64Array) {
      for (const id of ids) {
        let n = 1;
        while (n < 16 && id >= DIGITS_ABOVE[n]) n++;
        at = bulkHeader(wire, at, n);
        // Two halves below 10^8 each, whose digits small-integer arithmetic
        // writes (~2.5x faster here than dividing the whole id as a double).
        let high = Math.floor(id / 1e8);
        let low = id - high * 1e8;
        let c = at + n - 1;
        for (const lowEnd = n > 8 ? c - 7 : at; c >= lowEnd; c--) {
          const rest = (low / 10) | 0;
          wire[c] = 48 + low - rest * 10;
          low = rest;
        }
        for (; c >= at; c--) {
          const rest = (high / 10) | 0;
          wire[c] = 48 + high - rest * 10;
          high = rest;
        }
        at += n;
        wire[at++] = 13;
        wire[at++] = 10;
      }
    } else {
      for (const id of ids) {
        at = bulkHeader(wire, at, id.length);
        for (let c = 0; c < id.length; c++) wire[at++] = id.charCodeAt(c);
        wire[at++] = 13;
        wire[at++] = 10;
      }
    }
    this.wire = wire.subarray(0, at);
  }

  override toWritable(): Buffer {
    return this.wire;
  }
}

/**
 * The least take that pops with a native LPOP in a MULTI rather than inside
 * idpool_take. Measured here (INFO commandstats, CPU of both processes): a
 * take of 1,000 costs Redis ~200 µs in the function, of which the LPOP is
 * ~50 and the rest making and joining 1,000 Lua strings, and ~50 µs in the
 * MULTI; this process reads the reply's 1,000 elements where it split
 * one string, and keeps their bytes joined ({@link JoinedIds}) rather than
 * as 1,000 strings. Redis is the one process every instance shares, so large
 * takes spare it; a take of a few ids costs both processes less as one
 * call (the MULTI's four more commands cost single-id takes ~8 % of their
 * throughput).
 */
const MULTI_TAKE_FROM = 256;

/** A take's answer: its code, the count that goes with it (ids left, pool size or ms to wait), and the ids taken. */
type Taken = [code: ScriptCode, value: number, ids: TakenIds | null];

/** Service-mode pool: one Redis list per entity, shared by every instance and direct consumers. */
export class RedisPoolStore implements PoolStore {
  readonly kind = 'redis' as const;
  /** Where a native take's ids are joined ({@link JoinedIds.fromBytes}); grows to the largest take. */
  private scratch = Buffer.alloc(0);

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = DEFAULT_PREFIX,
  ) {}

  private fcall<T>(name: string, keys: string[], args: (string | number)[]): Promise<T> {
    return callFunction<T>(this.redis, name, keys, args);
  }

  /**
   * A take of {@link MULTI_TAKE_FROM} ids or more is one MULTI:
   * idpool_take_open checks the epoch, the per-second limit and the pool's
   * size, a native LPOP pops the ids, idpool_take_close puts the pool back
   * (take_open-4.lua says how a refused take pops nothing). A smaller one is
   * one function, idpool_take, which does the same and returns the ids
   * joined by commas. A server over maxmemory refuses every command queued
   * in a MULTI (Redis 7: queueing takes memory), but a take frees memory
   * and must go on while the pool holds ids: there every take is the
   * function, which such a server runs.
   */
  async take(entityKey: string, count: number, maxPerSecond: number): Promise<TakeResult> {
    const k = entityKeys(entityKey, this.prefix);
    const [code, value, ids] =
      count < MULTI_TAKE_FROM
        ? await this.takeInScript(k, count, maxPerSecond)
        : await this.takeInMulti(k, count, maxPerSecond);
    switch (code) {
      case ScriptCode.Ok:
        // Cannot happen (the same MULTI or function checked the pool's size); ids popped and never handed out are safe.
        if (ids?.length !== count) throw new Error(`the take popped ${ids?.length ?? 0} ids of ${count}`);
        return { kind: 'ok', ids, remaining: value };
      case ScriptCode.Short:
        return { kind: 'short', size: value };
      case ScriptCode.EpochChanged:
        return { kind: 'epoch_changed' };
      case ScriptCode.RateLimited:
        return { kind: 'rate_limited', retryAfterMs: value };
      default:
        throw new Error(`the take returned unknown code ${code}`);
    }
  }

  /** idpool_take: the checks and the LPOP in one function, the ids joined by commas. */
  private async takeInScript(k: EntityKeys, count: number, maxPerSecond: number): Promise<Taken> {
    const [code, value, joined] = await this.fcall<[ScriptCode, number, string?]>(
      'idpool_take',
      [k.ids, k.epoch, k.ratePrefix],
      [count, maxPerSecond],
    );
    return [code, value, joined === undefined ? null : listedIds(joined.split(','))];
  }

  /** idpool_take_open, a native LPOP and idpool_take_close in one MULTI; idpool_take where a server over maxmemory refuses it. */
  private async takeInMulti(k: EntityKeys, count: number, maxPerSecond: number): Promise<Taken> {
    const send = async (): Promise<Taken> => {
      const [opened, popped] = await transaction(
        'take',
        this.redis
          .multi()
          .fcall('idpool_take_open', 4, k.ids, k.epoch, k.ratePrefix, k.taking, count, maxPerSecond)
          .lpopBuffer(k.taking, count)
          .fcall('idpool_take_close', 2, k.taking, k.ids),
      );
      const [code, value] = opened as [ScriptCode, number];
      return [code, value, popped ? this.joined(popped as Buffer[]) : null];
    };
    try {
      return await withLibrary(this.redis, send);
    } catch (err) {
      if (errorMessage(err).startsWith('OOM')) return this.takeInScript(k, count, maxPerSecond);
      throw err;
    }
  }

  /**
   * The popped ids as one string. The reply's array is emptied: ioredis's
   * reply arrays outlive the take now and then (they reach the old
   * generation), and one that does keeps every element, here a view of the
   * socket's bytes, alive until the next full collection. Measured under
   * batches of 1,000: the young generation's survivors per scavenge fell
   * from ~9 MB to ~1 MB, and scavenge time from 400 to ~110 ms in 6 s.
   */
  private joined(popped: Buffer[]): JoinedIds {
    const bytes = joinedBytes(popped);
    if (this.scratch.length < bytes) this.scratch = Buffer.allocUnsafeSlow(Math.max(bytes, 2 * this.scratch.length));
    const ids = JoinedIds.fromBytes(popped, this.scratch);
    popped.length = 0;
    return ids;
  }

  /**
   * One MULTI: idpool_push_open checks the epoch and the fence, a native
   * RPUSH appends the ids, idpool_push_close puts the pool back (the Lua
   * files say how a refused segment never reaches the pool). A library
   * missing when the MULTI ran is loaded and the push made once more
   * ({@link withLibrary}): its ids went to the staging list only.
   */
  async push(entityKey: string, ids: PushIds, lowest: bigint, highest: bigint): Promise<PushResult> {
    const k = entityKeys(entityKey, this.prefix);
    const send = async () => {
      const multi = this.redis
        .multi()
        .fcall(
          'idpool_push_open',
          6,
          k.ids,
          k.fence,
          k.epoch,
          k.pushed,
          k.pushing,
          k.pushOpen,
          lowest.toString(),
          highest.toString(),
          ids.length,
        );
      (multi as unknown as { sendCommand(command: Command): unknown }).sendCommand(new RpushIds(k.pushing, ids));
      const [opened, , size] = await transaction(
        'push',
        multi.fcall('idpool_push_close', 3, k.ids, k.pushing, k.pushOpen),
      );
      const code = Number(opened);
      return code === ScriptCode.Ok ? Number(size) : code;
    };
    const code = await withLibrary(this.redis, send);
    return pushResult(code);
  }

  size(entityKey: string): Promise<number> {
    return this.redis.llen(entityKeys(entityKey, this.prefix).ids);
  }

  async sizes(keys: readonly string[]): Promise<(number | Error)[]> {
    const ids = keys.map((key) => entityKeys(key, this.prefix).ids);
    const replies = await pipelinePerNode(this.redis, ids, (p, i) => p.llen(ids[i]));
    return replies.map((r) => (r instanceof Error ? r : Number(r[0])));
  }

  async levels(keys: readonly string[]): Promise<(PoolLevel | Error)[]> {
    const all = keys.map((key) => entityKeys(key, this.prefix));
    const replies = await pipelinePerNode(
      this.redis,
      all.map((k) => k.ids),
      (p, i) => p.llen(all[i].ids).get(all[i].pushed),
    );
    return replies.map((r) =>
      r instanceof Error ? r : { size: Number(r[0]), taken: Math.max(0, Number(r[1] ?? 0) - Number(r[0])) },
    );
  }

  async reset(entityKey: string, issuedUpTo: bigint): Promise<boolean> {
    const k = entityKeys(entityKey, this.prefix);
    const fence = issuedUpTo >= 0n ? issuedUpTo.toString() : '';
    return (await this.fcall<number>('idpool_reset', [k.ids, k.fence, k.epoch, k.pushed], [fence])) === 1;
  }

  async unlockStale(entityKey: string): Promise<boolean> {
    const k = entityKeys(entityKey, this.prefix);
    return (await this.fcall<number>('idpool_unlock_stale', [k.lock, k.epoch], [])) === 1;
  }

  async discard(entityKey: string): Promise<void> {
    const k = entityKeys(entityKey, this.prefix);
    await this.redis.del(k.ids, k.pushed, k.pushing);
  }

  /** The epoch of the server, or of every master of a Cluster (sorted): it changes when any of them restarts or is promoted. */
  async epoch(): Promise<string> {
    const infos = await Promise.all(mastersOf(this.redis).map((node) => node.info('server', 'replication')));
    return infos.map(epochOf).sort().join(',');
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }
}

/** The error a Redis server answered a lock attempt with, if it was not "held by another". */
async function serverRefusal(err: unknown): Promise<Error | undefined> {
  if (!(err instanceof ExecutionError)) return err instanceof Error ? err : new Error(String(err));
  for (const attempt of err.attempts) {
    for (const vote of (await attempt).votesAgainst.values()) if (!(vote instanceof ResourceLockedError)) return vote;
  }
  return undefined;
}

/** Refill lock on Redis (redlock on the node that owns the entity's slot): skip rather than queue when held. */
export class RedisRefillLock implements RefillLock {
  private readonly redlock: Redlock;

  constructor(
    redis: RedisClient,
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
    } catch (err) {
      // Held by another refiller: skip. Refused by the server (over
      // maxmemory, a replica, gone): that is this refill's failure, and
      // takes that find the pool short answer with it (503 and its alarm).
      const refusal = await serverRefusal(err);
      if (refusal) throw refusal;
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
