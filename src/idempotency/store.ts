import { ConflictError, UnavailableError } from '../errors';

/**
 * `Idempotency-Key` on `POST /apps/:key/ids`: a retry, on any instance, gets the first answer's ids. The first
 * stored answer wins: a request whose own answer loses (its claim expired) returns the stored one and its batch is
 * wasted, never handed out. The claim only spares the common case a second batch.
 */
export interface IdempotencyStore {
  /**
   * The stored answer for the key, or `produce`'s, kept {@link ANSWER_TTL_MS}. Throws ConflictError for another
   * count, UnavailableError while another request with the key runs.
   */
  once(entityKey: string, requestKey: string, count: number, produce: ProduceIds): Promise<IdempotentAnswer>;
}

/** Takes the ids of a request's first answer. */
export type ProduceIds = () => Promise<string[]>;

export interface IdempotentAnswer {
  ids: string[];
  /** True when these ids were stored by an earlier request with the same key. */
  replayed: boolean;
}

/** How long an answer is kept: long enough for any client's retries (the SDK gives up after 15 s). */
export const ANSWER_TTL_MS = 5 * 60_000;
/** A claim's life: a request takes ≤ ~2.5 s (250 ms shortage wait + 2 s Redis timeout); a crash's must not block long. */
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
