import { ConflictError, UnavailableError } from '../errors';

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
  once(
    entityKey: string,
    requestKey: string,
    count: number,
    produce: () => Promise<string[]>,
  ): Promise<IdempotentAnswer>;
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

/** What a store keeps per key: the count asked for and the ids answered. */
export interface StoredAnswer {
  count: number;
  ids: string[];
}

export function checked(stored: StoredAnswer, count: number): IdempotentAnswer {
  if (stored.count !== count) {
    throw new ConflictError(
      `this Idempotency-Key was used for a request of ${stored.count} ids; a retry must ask for the same count (or use a new key)`,
    );
  }
  return { ids: stored.ids, replayed: true };
}

export const inProgress = () =>
  new UnavailableError('a request with this Idempotency-Key is still in progress; retry shortly', 1);
