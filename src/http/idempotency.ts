import type { Request } from 'express';
import type Redis from 'ioredis';
import type { Clock } from '../clock';
import { ConflictError, InvalidRequestError, UnavailableError } from '../errors';
import { DEFAULT_PREFIX, idempotencyKeys } from '../pool/keys';

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

/** Shared by every instance that talks to the same Redis. */
export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: Pick<Redis, 'get' | 'set' | 'del'>,
    private readonly clock: Clock,
    private readonly prefix = DEFAULT_PREFIX,
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
    const stored = await this.redis.set(keys.answer, JSON.stringify({ count, ids } satisfies StoredAnswer), 'PX', ANSWER_TTL_MS, 'NX');
    if (stored === 'OK') return { ids, replayed: false };
    // Our claim expired and another request answered first: its answer stands.
    const winner = await this.answer(keys.answer);
    if (!winner) throw inProgress();
    return checked(winner, count);
  }

  private async answer(key: string): Promise<StoredAnswer | undefined> {
    const raw = await this.redis.get(key);
    return raw === null ? undefined : (JSON.parse(raw) as StoredAnswer);
  }
}

interface MemoryEntry {
  count: number;
  expiresAt: number;
  answer: Promise<string[]>;
}

/**
 * In-process store for the single-node / embedded mode. Requests with the
 * same key share one promise, so the second simply waits for the first.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, MemoryEntry>();

  constructor(
    private readonly clock: Clock,
    /** Bound on remembered answers: ~100k batches of small counts is a few tens of MB at most. */
    private readonly maxEntries = 100_000,
  ) {}

  async once(entityKey: string, requestKey: string, count: number, produce: () => Promise<string[]>): Promise<IdempotentAnswer> {
    const id = `${entityKey}\n${requestKey}`;
    const now = this.clock.now();
    const found = this.entries.get(id);
    if (found && found.expiresAt > now) {
      if (found.count !== count) checked({ count: found.count, ids: [] }, count);
      return { ids: await found.answer, replayed: true };
    }
    this.evict(now);
    const answer = produce();
    const entry: MemoryEntry = { count, expiresAt: now + ANSWER_TTL_MS, answer };
    this.entries.set(id, entry);
    // A failed request is forgotten so a retry runs again.
    answer.catch(() => {
      if (this.entries.get(id) === entry) this.entries.delete(id);
    });
    return { ids: await answer, replayed: false };
  }

  /** Drops expired entries, then the oldest ones beyond the bound (Map order is insertion order). */
  private evict(now: number): void {
    if (this.entries.size < this.maxEntries) return;
    for (const [id, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(id);
    for (const id of this.entries.keys()) {
      if (this.entries.size < this.maxEntries) break;
      this.entries.delete(id);
    }
  }
}
