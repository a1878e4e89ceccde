/**
 * Every Redis key idpool uses, built here and nowhere else (DESIGN.md
 * "Redis keys"). `{entityKey}` is a hash tag, so all keys of one entity live
 * on one cluster slot and one Lua script may touch them together.
 */
export interface EntityKeys {
  /** Ready ids, head = next. Trusted consumers may LPOP it directly. */
  readonly ids: string;
  /** Highest id ever pushed (decimal). */
  readonly fence: string;
  /** Refill lock (redlock). */
  readonly lock: string;
  /** Prefix of the per-second counters; the second is appended inside Lua. */
  readonly ratePrefix: string;
  /** Epoch (`run_id:master_replid`) of the Redis server this entity's pool was filled in. */
  readonly server: string;
  /** Ids pushed into the pool since it was last reset: `pushed − LLEN` is what every pop took. */
  readonly pushed: string;
}

export const DEFAULT_PREFIX = 'idpool';

export function entityKeys(entityKey: string, prefix = DEFAULT_PREFIX): EntityKeys {
  const base = `${prefix}:{${entityKey}}`;
  return {
    ids: `${base}:ids`,
    fence: `${base}:fence`,
    lock: `${base}:lock`,
    ratePrefix: `${base}:rate:`,
    server: `${base}:server`,
    pushed: `${base}:pushed`,
  };
}

/** Keys of one `Idempotency-Key` of one entity (see `http/idempotency.ts`). */
export interface IdempotencyKeys {
  /** Held (SET NX, short TTL) while the first request with this key runs. */
  readonly claim: string;
  /** The stored answer, JSON `{count, ids}`; the first one written wins. */
  readonly answer: string;
  /** Sorted set of this entity's stored answers by time, to cap how many are kept. */
  readonly index: string;
  /** The answer key of another request key of the same entity. */
  answerOf(requestKey: string): string;
}

/** `requestKey` is the client's header value (printable ASCII); it ends the key, so no two values collide. */
export function idempotencyKeys(entityKey: string, requestKey: string, prefix = DEFAULT_PREFIX): IdempotencyKeys {
  const base = `${prefix}:{${entityKey}}:idem`;
  return { claim: `${base}:claim:${requestKey}`, answer: `${base}:answer:${requestKey}`, index: `${base}:index`, answerOf: (other) => `${base}:answer:${other}` };
}

/** Counter of entity registrations, bumped by every instance (see `entities/registry.ts`). */
export function registrationsKey(prefix = DEFAULT_PREFIX): string {
  return `${prefix}:registrations`;
}
