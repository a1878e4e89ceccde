// Every Redis key idpool uses, built here and nowhere else (docs/design.md "Redis keys"). `{entityKey}` is a hash
// tag, so all keys of one entity live on one cluster slot and one function call (or one MULTI) may touch them together.

export const DEFAULT_PREFIX = 'idpool';
/** What IDPOOL_REDIS_KEY_PREFIX may be: no braces (they would move the hash tag), no space; short, as it starts every key. */
export const PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The start of every key of one entity, its hash tag. */
const tagged = (entityKey: string, prefix: string) => `${prefix}:{${entityKey}}`;

export function entityKeys(entityKey: string, prefix = DEFAULT_PREFIX) {
  const base = tagged(entityKey, prefix);
  return {
    /** Ready ids, head = next. Trusted consumers may LPOP it directly. */
    ids: `${base}:ids`,
    /** Highest id ever pushed (decimal). */
    fence: `${base}:fence`,
    /** Refill lock: a lease its holder extends while it refills (`refill-lock.ts`). */
    lock: `${base}:lock`,
    /** Prefix of the per-second counters; the second is appended inside Lua. */
    ratePrefix: `${base}:rate:`,
    /** Epoch (`run_id:master_replid`) of the Redis server this entity's pool was filled in. */
    epoch: `${base}:server`,
    /** Ids pushed into the pool since it was last reset: `pushed − LLEN` is what takes and direct pops took. */
    pushed: `${base}:pushed`,
    /** The pool while a push appends to it, and an accepted push's marker: they exist only inside the push's MULTI. */
    pushing: `${base}:pushing`,
    pushOpen: `${base}:push_open`,
    /** The pool while a take pops from it (idpool_take_open / _close): it exists only inside the take's MULTI. */
    taking: `${base}:taking`,
  };
}
export type EntityKeys = Readonly<ReturnType<typeof entityKeys>>;

/** A gapless series' high-water record (docs/numbers.md "Gapless series"): per period, the highest sequence committed (`ZADD GT`). */
export function gaplessHighWaterKey(entityKey: string, prefix = DEFAULT_PREFIX): string {
  return `${tagged(entityKey, prefix)}:g:hw`;
}

/** Keys of one business-number entity (docs/numbers.md): now's numbers wait in the plain pool's `ids`, popped as plain ids are. */
export function numberKeys(entityKey: string, prefix = DEFAULT_PREFIX) {
  const { ids, epoch, ratePrefix, pushed, pushing, pushOpen } = entityKeys(entityKey, prefix);
  const base = tagged(entityKey, prefix);
  return {
    ...{ ids, epoch, ratePrefix, pushed, pushing, pushOpen },
    /** The period table: the live and the staged period, their bounds, whether full, the newest period gone live. */
    periods: `${base}:n:periods`,
    /** Highest sequence ever pushed, per period id (a hash). */
    fence: `${base}:n:fence`,
    /** Formatted numbers of the next period, until it begins and they become `ids`. */
    staged: `${base}:n:staged`,
  };
}
export type NumberKeys = Readonly<ReturnType<typeof numberKeys>>;

/**
 * Keys of one `Idempotency-Key` of one entity (see `idempotency/redis-store.ts`). `requestKey` is the client's
 * header value (printable ASCII); it ends the key, so no two values collide.
 */
export function idempotencyKeys(entityKey: string, requestKey: string, prefix = DEFAULT_PREFIX) {
  const base = `${tagged(entityKey, prefix)}:idem`;
  const answerPrefix = `${base}:answer:`;
  return {
    /** Held (SET NX, short TTL) while the first request with this key runs. */
    claim: `${base}:claim:${requestKey}`,
    /** The stored answer, JSON `{count, ids}`; the first one written wins. */
    answer: `${answerPrefix}${requestKey}`,
    /** Sorted set of this entity's stored answers (`requestKey\nbytes`) by time, to cap how many are kept. */
    index: `${base}:index`,
    /** Bytes of this entity's answers in `index`, to cap them. */
    bytes: `${base}:bytes`,
    /** The answer key of another request key of the same entity. */
    answerOf: (other: string) => `${answerPrefix}${other}`,
    /** `answerOf(k)` less `k`: what the store function prepends to a request key. */
    answerPrefix,
  };
}

/** Bytes of answers stored by every instance during `minute` (Unix minutes); one hash tag, so one MGET reads the last few. */
export function idempotencyBytesKey(minute: number, prefix = DEFAULT_PREFIX): string {
  return `${prefix}:{idem-bytes}:${minute}`;
}

/** Counter of entity registrations, bumped by every instance (see `entities/generation-sync.ts`). */
export function registrationsKey(prefix = DEFAULT_PREFIX): string {
  return `${prefix}:registrations`;
}

/** Keys the instances of one deployment share (docs/operating.md "The fleet"), on one Cluster slot. */
export function fleetKeys(prefix = DEFAULT_PREFIX) {
  const base = `${prefix}:{fleet}`;
  return {
    /** Stream of every instance's alarm records, capped (XADD MAXLEN ~). */
    alarms: `${base}:alarms`,
    /** Hash of heartbeats: field = instance id, value = its JSON heartbeat. */
    instances: `${base}:instances`,
    /** Hash of each instance's recent take rates per entity (JSON), written with its heartbeat, read by pages only. */
    rates: `${base}:rates`,
  };
}
export type FleetKeys = Readonly<ReturnType<typeof fleetKeys>>;

/** The worker leases' second record, which a database restore cannot undo (docs/ha.md); one slot, so one function touches both. */
export function workerKeys(prefix = DEFAULT_PREFIX) {
  const base = `${prefix}:{workers}`;
  return {
    /** Hash: worker id → token of the lease granted last. */
    holders: `${base}:holders`,
    /** Sorted set: worker id → the highest Unix ms any lease of it may have used. */
    ceilings: `${base}:ceilings`,
  };
}
export type WorkerKeys = Readonly<ReturnType<typeof workerKeys>>;

/** Which deployment (the id recorded in its database) owns the keys under this prefix (see `redis/deployment-claim.ts`). */
export function deploymentKey(prefix = DEFAULT_PREFIX): string {
  return `${prefix}:deployment`;
}
