import type { Request } from 'express';
import type Redis from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock';
import { ConflictError, InvalidRequestError, UnavailableError } from '../errors';
import { DEFAULT_PREFIX, type IdempotencyKeys, idempotencyKeys } from '../pool/keys';

/**
 * `Idempotency-Key` on `POST /apps/:key/ids`: a client that timed out and
 * sends the same request again (to this or another instance) gets the ids of
 * the first answer instead of a second batch, so a retry neither wastes nor
 * repeats ids.
 *
 * The rule that keeps answers consistent is "first stored answer wins":
 * the answer is written with SET NX, and a request whose own answer loses
 * (its claim expired while it ran, someone else answered) returns the stored
 * one; its own batch is wasted, never handed out. The claim only stops two
 * requests with the same key from both taking a batch in the common case.
 */
export interface IdempotencyStore {
  /**
   * The stored answer for (entityKey, requestKey), or the one `produce` gives,
   * kept for {@link ANSWER_TTL_MS}. Throws ConflictError when the key was used
   * with another count, UnavailableError while another request with the same
   * key is still running.
   */
  once(entityKey: string, requestKey: string, count: number, produce: () => Promise<string[]>): Promise<IdempotentAnswer>;
}

export interface IdempotentAnswer {
  ids: string[];
  /** True when these ids were stored by an earlier request with the same key. */
  replayed: boolean;
}

/** How long an answer is kept: long enough for any client's retries (the SDK gives up after 15 s). */
export const ANSWER_TTL_MS = 5 * 60_000;
/**
 * How long a claim holds off other requests with the same key. A request
 * takes at most ~2.5 s (250 ms shortage wait + 2 s Redis command timeout);
 * a claim left by a crashed instance must not block retries much longer.
 */
export const CLAIM_TTL_MS = 5_000;
/** How long a request waits for another one with the same key to answer before 503. */
export const IN_PROGRESS_WAIT_MS = 1_000;
const POLL_MS = 25;

/** Printable ASCII, 1–128 characters. */
const HEADER_PATTERN = /^[\x20-\x7e]{1,128}$/;

/** The request's `Idempotency-Key`, or undefined; 400 when it is malformed. */
export function idempotencyKeyOf(req: Pick<Request, 'get'>): string | undefined {
  const raw = req.get('idempotency-key');
  if (raw === undefined) return undefined;
  if (!HEADER_PATTERN.test(raw)) throw new InvalidRequestError('Idempotency-Key must be 1-128 printable ASCII characters');
  return raw;
}

/**
 * Runs `produce` once per Idempotency-Key (when the request has one and a
 * store is wired), otherwise simply runs it.
 */
export async function answerOnce(
  store: IdempotencyStore | undefined,
  req: Pick<Request, 'get'>,
  entityKey: string,
  count: number,
  produce: () => Promise<string[]>,
): Promise<IdempotentAnswer> {
  const requestKey = idempotencyKeyOf(req);
  if (requestKey === undefined || !store) return { ids: await produce(), replayed: false };
  return store.once(entityKey, requestKey, count, produce);
}

interface StoredAnswer {
  count: number;
  ids: string[];
}

function checked(stored: StoredAnswer, count: number): IdempotentAnswer {
  if (stored.count !== count) {
    throw new ConflictError(`this Idempotency-Key was used for a request of ${stored.count} ids; a retry must ask for the same count (or use a new key)`);
  }
  return { ids: stored.ids, replayed: true };
}

const inProgress = () => new UnavailableError('a request with this Idempotency-Key is still in progress; retry shortly', 1);

/**
 * Answers in Redis as `count;runs`: a run is one id, or `first+diff*n` for
 * n ids spaced by diff. A monotonic batch of 1,000 ids is one run (~30 bytes
 * instead of ~16 KB of JSON); a trend batch stays one id per run.
 */
export function encodeAnswer(count: number, ids: string[]): string {
  const runs: string[] = [];
  let i = 0;
  while (i < ids.length) {
    const first = BigInt(ids[i]);
    let n = 1;
    let diff = 0n;
    if (i + 1 < ids.length) {
      diff = BigInt(ids[i + 1]) - first;
      if (diff > 0n) while (i + n < ids.length && BigInt(ids[i + n]) === first + diff * BigInt(n)) n++;
    }
    runs.push(n === 1 ? ids[i] : `${ids[i]}+${diff}*${n}`);
    i += n;
  }
  return `${count};${runs.join(',')}`;
}

export function decodeAnswer(raw: string): StoredAnswer {
  const split = raw.indexOf(';');
  const ids: string[] = [];
  const body = raw.slice(split + 1);
  if (body !== '') {
    for (const run of body.split(',')) {
      const m = /^(\d+)\+(\d+)\*(\d+)$/.exec(run);
      if (!m) {
        ids.push(run);
        continue;
      }
      const first = BigInt(m[1]);
      const diff = BigInt(m[2]);
      const n = Number(m[3]);
      for (let k = 0; k < n; k++) ids.push((first + diff * BigInt(k)).toString());
    }
  }
  return { count: Number(raw.slice(0, split)), ids };
}

/**
 * Answers kept per entity in Redis: the oldest are dropped beyond it. 10,000
 * answers in 5 minutes is 33 keyed requests a second per entity; monotonic
 * answers are ~50 bytes (~0.5 MB per entity), a trend batch of 1,000 ids
 * ~17 KB.
 */
export const REDIS_ANSWERS_PER_ENTITY = 10_000;

type IdempotencyRedis = Pick<Redis, 'get' | 'set' | 'del' | 'zadd' | 'zcard' | 'zpopmin' | 'zremrangebyscore'>;

/** Shared by every instance that talks to the same Redis. */
export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: IdempotencyRedis,
    private readonly clock: Clock,
    private readonly prefix = DEFAULT_PREFIX,
    private readonly answersPerEntity = REDIS_ANSWERS_PER_ENTITY,
  ) {}

  async once(entityKey: string, requestKey: string, count: number, produce: () => Promise<string[]>): Promise<IdempotentAnswer> {
    const keys = idempotencyKeys(entityKey, requestKey, this.prefix);
    const earlier = await this.answer(keys.answer);
    if (earlier) return checked(earlier, count);

    const token = `${process.pid}:${this.clock.monotonic()}:${Math.random()}`;
    const claimed = await this.redis.set(keys.claim, token, 'PX', CLAIM_TTL_MS, 'NX');
    if (claimed !== 'OK') {
      const deadline = this.clock.monotonic() + IN_PROGRESS_WAIT_MS;
      while (this.clock.monotonic() < deadline) {
        await this.clock.sleep(POLL_MS);
        const stored = await this.answer(keys.answer);
        if (stored) return checked(stored, count);
      }
      throw inProgress();
    }

    let ids: string[];
    try {
      ids = await produce();
    } catch (err) {
      // Nothing was handed out: let a retry try again at once.
      await this.redis.del(keys.claim).catch(() => undefined);
      throw err;
    }
    const stored = await this.redis.set(keys.answer, encodeAnswer(count, ids), 'PX', ANSWER_TTL_MS, 'NX');
    if (stored === 'OK') {
      await this.bound(keys, requestKey);
      return { ids, replayed: false };
    }
    // Our claim expired and another request answered first: its answer stands.
    const winner = await this.answer(keys.answer);
    if (!winner) throw inProgress();
    return checked(winner, count);
  }

  /** Indexes the new answer by time and drops this entity's oldest answers beyond the cap. */
  private async bound(keys: IdempotencyKeys, requestKey: string): Promise<void> {
    const now = this.clock.now();
    await this.redis.zadd(keys.index, now, requestKey);
    await this.redis.zremrangebyscore(keys.index, '-inf', now - ANSWER_TTL_MS);
    const excess = (await this.redis.zcard(keys.index)) - this.answersPerEntity;
    if (excess <= 0) return;
    const oldest = await this.redis.zpopmin(keys.index, excess);
    // zpopmin answers [member, score, member, score, …].
    for (let i = 0; i < oldest.length; i += 2) await this.redis.del(keys.answerOf(oldest[i]));
  }

  private async answer(key: string): Promise<StoredAnswer | undefined> {
    const raw = await this.redis.get(key);
    return raw === null ? undefined : decodeAnswer(raw);
  }
}

interface MemoryEntry {
  count: number;
  answer: Promise<string[]>;
}

/** Default bound of the in-process store (IDPOOL_IDEMPOTENCY_MAX_MB). */
export const DEFAULT_IDEMPOTENCY_MAX_MB = 64;

/**
 * Heap bytes one remembered id costs: its string and array slot, measured
 * at ~42 bytes for 13-digit ids (heapUsed over 1M ids, Node 20). Entry
 * overhead (key, promise, cache node) is counted as 200.
 */
const BYTES_PER_ID = 44;
const BYTES_PER_ENTRY = 200;

/**
 * In-process store for the single-node / embedded mode, bounded in bytes
 * with least-recently-used eviction in O(1) (lru-cache). Requests with the
 * same key share one promise, so the second simply waits for the first.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries: LRUCache<string, MemoryEntry>;

  constructor(clock: Clock, maxBytes = DEFAULT_IDEMPOTENCY_MAX_MB * 1024 * 1024) {
    this.entries = new LRUCache<string, MemoryEntry>({
      maxSize: maxBytes,
      sizeCalculation: (entry, key) => BYTES_PER_ENTRY + key.length * 2 + entry.count * BYTES_PER_ID,
      ttl: ANSWER_TTL_MS,
      // Expired entries are dropped when met or evicted; no timer per entry.
      ttlAutopurge: false,
      // Read the (injected) clock on every check instead of caching it for 1 ms.
      ttlResolution: 0,
      // +1: lru-cache takes an entry started at time 0 as one without a TTL.
      perf: { now: () => clock.monotonic() + 1 },
    });
  }

  async once(entityKey: string, requestKey: string, count: number, produce: () => Promise<string[]>): Promise<IdempotentAnswer> {
    const id = `${entityKey}\n${requestKey}`;
    const found = this.entries.get(id);
    if (found) {
      if (found.count !== count) checked({ count: found.count, ids: [] }, count);
      return { ids: await found.answer, replayed: true };
    }
    const answer = produce();
    const entry: MemoryEntry = { count, answer };
    this.entries.set(id, entry);
    // A failed request is forgotten so a retry runs again.
    answer.catch(() => {
      if (this.entries.peek(id) === entry) this.entries.delete(id);
    });
    return { ids: await answer, replayed: false };
  }

  /** Bytes of answers held (as counted for the bound). */
  get sizeBytes(): number {
    return this.entries.calculatedSize;
  }
}
