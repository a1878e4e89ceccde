import { Cluster } from 'ioredis';
import { type RedisClient, mastersOf } from '../redis/connection';
import { type EntityKeys, entityKeys, DEFAULT_PREFIX } from '../redis/keys';
import { callFunction, queueFunction, scriptOutcome, withLibrary } from '../redis/functions';
import { pipelinePerNode } from '../redis/node-pipeline';
import { replyWord } from '../redis/errors';
import { epochOf } from '../redis/info';
import { RpushIds, queueRpush } from './redis-rpush-ids';
import { transaction } from '../redis/transaction';
import type { PoolLevel, PoolStore, PushIds, TakeResult, PushResult } from './pool-store';
import { JoinedIds, listedIds, type TakenIds } from './taken-ids';

/**
 * The least take popped by a native LPOP in a MULTI rather than in idpool_take. Measured (INFO commandstats): 1,000 ids
 * cost Redis, which every instance shares, ~200 µs in the function (Lua strings) and ~50 µs in the MULTI; for a few ids
 * the MULTI's four more commands cost ~8 % of throughput.
 */
const MULTI_TAKE_FROM = 256;

/** Keys one MGET reads (fences, pushed counters): a reply of ~30 KB, a fraction of a ms of Redis. */
const KEYS_PER_MGET = 1000;

/** A take's answer: its code, the count that goes with it (ids left, pool size or ms to wait), and the ids taken. */
type Taken = [code: number, value: number, ids: TakenIds | null];

/** Service-mode pool: one Redis list per entity, shared by every instance and direct consumers. */
export class RedisPoolStore implements PoolStore {
  readonly kind = 'redis' as const;
  /** The epoch read under way, shared by whoever asks meanwhile. */
  private epochRead: Promise<string> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = DEFAULT_PREFIX,
  ) {}

  /**
   * From {@link MULTI_TAKE_FROM} ids, one MULTI: idpool_take_open's checks, a native LPOP, idpool_take_close
   * (take_open-4.lua: a refused take pops nothing); fewer, idpool_take. A server over maxmemory refuses a MULTI's
   * queued commands (Redis 7), but a take frees memory: there, the function.
   */
  async take(entityKey: string, count: number, maxPerSecond: number): Promise<TakeResult> {
    const k = entityKeys(entityKey, this.prefix);
    const [code, value, ids] =
      count < MULTI_TAKE_FROM
        ? await this.takeInScript(k, count, maxPerSecond)
        : await this.takeInMulti(k, count, maxPerSecond);
    const outcome = scriptOutcome('idpool_take', code, value, ['short', 'epoch_changed', 'rate_limited']);
    if (outcome.kind !== 'ok') return outcome;
    // Cannot happen (the same MULTI or function checked the pool's size); ids popped and never handed out are safe.
    if (ids?.length !== count) throw new Error(`the take popped ${ids?.length ?? 0} ids of ${count}`);
    return { kind: 'ok', ids, remaining: outcome.value };
  }

  /** idpool_take: the checks and the LPOP in one function, the ids joined by commas. */
  private async takeInScript(k: EntityKeys, count: number, maxPerSecond: number): Promise<Taken> {
    const [code, value, joined] = await callFunction<[number, number, string?]>(
      this.redis,
      'idpool_take',
      [k.ids, k.epoch, k.ratePrefix],
      [count, maxPerSecond],
    );
    return [code, value, joined === undefined ? null : listedIds(joined.split(','))];
  }

  private async takeInMulti(k: EntityKeys, count: number, maxPerSecond: number): Promise<Taken> {
    const send = async (): Promise<Taken> => {
      const multi = queueFunction(
        this.redis.multi(),
        'idpool_take_open',
        [k.ids, k.epoch, k.ratePrefix, k.taking],
        [count, maxPerSecond],
      ).lpopBuffer(k.taking, count);
      const replies = await transaction('take', queueFunction(multi, 'idpool_take_close', [k.taking, k.ids], []));
      const [[code, value], popped] = replies as [[number, number], Buffer[] | null];
      if (!popped) return [code, value, null];
      // The reply's array emptied: one that reaches the old generation keeps its elements (views of the socket's bytes)
      // alive; emptied, survivors per scavenge fell from ~9 MB to ~1 MB (batches of 1,000).
      const ids = JoinedIds.fromBytes(popped);
      popped.length = 0;
      return [code, value, ids];
    };
    try {
      return await withLibrary(this.redis, send);
    } catch (err) {
      if (replyWord(err) === 'OOM') return this.takeInScript(k, count, maxPerSecond);
      throw err;
    }
  }

  /** One MULTI: push_open (epoch, fence), RPUSH, push_close; redone once a missing library loads (its ids only staged). */
  async push(entityKey: string, ids: PushIds, lowest: bigint, highest: bigint): Promise<PushResult> {
    const k = entityKeys(entityKey, this.prefix);
    const send = async () => {
      const multi = queueFunction(
        this.redis.multi(),
        'idpool_push_open',
        [k.ids, k.fence, k.epoch, k.pushed, k.pushing, k.pushOpen],
        [lowest.toString(), highest.toString(), ids.length],
      );
      queueRpush(multi, new RpushIds(k.pushing, ids));
      const [opened, , size] = await transaction(
        'push',
        queueFunction(multi, 'idpool_push_close', [k.ids, k.pushing, k.pushOpen], []),
      );
      return scriptOutcome('idpool_push_open', Number(opened), Number(size), ['epoch_changed', 'fenced']);
    };
    const outcome = await withLibrary(this.redis, send);
    return outcome.kind === 'ok' ? { kind: 'ok', size: outcome.value } : outcome;
  }

  size(entityKey: string): Promise<number> {
    return this.redis.llen(entityKeys(entityKey, this.prefix).ids);
  }

  async sizes(keys: readonly string[]): Promise<(number | Error)[]> {
    const ids = keys.map((key) => entityKeys(key, this.prefix).ids);
    const replies = await pipelinePerNode(this.redis, ids, (p, i) => p.llen(ids[i]));
    return replies.map((r) => (r instanceof Error ? r : Number(r[0])));
  }

  async next(entityKey: string): Promise<bigint | undefined> {
    const head = await this.redis.lindex(entityKeys(entityKey, this.prefix).ids, 0);
    return head === null ? undefined : BigInt(head);
  }

  /** One server: one `idpool_levels` call (levels-n.lua) for all; a Cluster: LLEN and GET per pool, a pipeline per node. */
  async levels(keys: readonly string[]): Promise<(PoolLevel | Error)[]> {
    const all = keys.map((key) => entityKeys(key, this.prefix));
    const level = (size: unknown, pushed: unknown) => ({
      size: Number(size),
      taken: Math.max(0, Number(pushed ?? 0) - Number(size)),
    });
    if (all.length === 0) return [];
    if (this.redis instanceof Cluster) {
      const replies = await pipelinePerNode(
        this.redis,
        all.map((k) => k.ids),
        (p, i) => p.llen(all[i].ids).get(all[i].pushed),
      );
      return replies.map((r) => (r instanceof Error ? r : level(r[0], r[1])));
    }
    // One call, so a size and its counter are one instant's: read apart, a push between them reads as a burst of takes.
    const replies = await callFunction<unknown[]>(
      this.redis,
      'idpool_levels',
      all.flatMap((k) => [k.ids, k.pushed]),
      [],
    );
    return all.map((_, i) => {
      const size = replies[2 * i];
      // A counter is never an error: the function's MGET reads one of the wrong type as unset.
      if (size instanceof Error) return size;
      return size === undefined ? new Error('no reply') : level(size, replies[2 * i + 1]);
    });
  }

  async reset(entityKey: string, issuedUpTo: bigint): Promise<boolean> {
    const k = entityKeys(entityKey, this.prefix);
    const fence = issuedUpTo >= 0n ? issuedUpTo.toString() : '';
    return (await callFunction<number>(this.redis, 'idpool_reset', [k.ids, k.fence, k.epoch, k.pushed], [fence])) === 1;
  }

  async fence(entityKey: string): Promise<bigint | undefined> {
    const fence = await this.redis.get(entityKeys(entityKey, this.prefix).fence);
    return fence ? BigInt(fence) : undefined;
  }

  /**
   * One server: MGETs of KEYS_PER_MGET keys in one pipeline (10,000 GETs cost ~5× the CPU of 10 MGETs,
   * bench/fence-check.bench.ts). A Cluster refuses an MGET across slots: a GET per key, one pipeline per node.
   */
  async fences(keys: readonly string[]): Promise<(bigint | undefined | Error)[]> {
    const fences = keys.map((key) => entityKeys(key, this.prefix).fence);
    const fence = (value: unknown) => (typeof value === 'string' && value !== '' ? BigInt(value) : undefined);
    if (this.redis instanceof Cluster) {
      const replies = await pipelinePerNode(this.redis, fences, (p, i) => p.get(fences[i]));
      return replies.map((r) => (r instanceof Error ? r : fence(r[0])));
    }
    const pipeline = this.redis.pipeline();
    for (let i = 0; i < fences.length; i += KEYS_PER_MGET) pipeline.mget(fences.slice(i, i + KEYS_PER_MGET));
    // One value per key; a failed MGET's error in the place of each of its keys.
    const out: (bigint | undefined | Error)[] = [];
    for (const [err, values] of (await pipeline.exec()) ?? []) {
      const chunk = Math.min(KEYS_PER_MGET, fences.length - out.length);
      if (err) for (let i = 0; i < chunk; i++) out.push(err);
      else out.push(...(values as (string | null)[]).map(fence));
    }
    return out;
  }

  async unlockStale(entityKey: string): Promise<boolean> {
    const k = entityKeys(entityKey, this.prefix);
    return (await callFunction<number>(this.redis, 'idpool_unlock_stale', [k.lock, k.epoch], [])) === 1;
  }

  async raiseFence(entityKey: string, below: bigint): Promise<void> {
    const k = entityKeys(entityKey, this.prefix);
    await callFunction(this.redis, 'idpool_raise_fence', [k.ids, k.fence, k.pushed, k.pushing], [below.toString()]);
  }

  async discard(entityKey: string): Promise<void> {
    const k = entityKeys(entityKey, this.prefix);
    await this.redis.del(k.ids, k.pushed, k.pushing);
  }

  /** The epoch of the server, or of each Cluster master (sorted); callers during a read (sweep, heartbeat) share it. */
  epoch(): Promise<string> {
    this.epochRead ??= this.readEpoch().finally(() => {
      this.epochRead = undefined;
    });
    return this.epochRead;
  }

  private async readEpoch(): Promise<string> {
    const infos = await Promise.all(mastersOf(this.redis).map((node) => node.info('server', 'replication')));
    return infos.map(epochOf).sort().join(',');
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }
}
