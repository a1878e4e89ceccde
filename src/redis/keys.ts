/**
 * Every Redis key idpool uses, built here and nowhere else (docs/design.md
 * "Redis keys"). `{entityKey}` is a hash tag, so all keys of one entity live
 * on one cluster slot and one function call (or one MULTI) may touch them together.
 */
export interface EntityKeys {
  /** Ready ids, head = next. Trusted consumers may LPOP it directly. */
  readonly ids: string;
  /** Highest id ever pushed (decimal). */
  readonly fence: string;
  /** Refill lock: a lease its holder extends while it refills (`refill-lock.ts`). */
  readonly lock: string;
  /** Prefix of the per-second counters; the second is appended inside Lua. */
  readonly ratePrefix: string;
  /** Epoch (`run_id:master_replid`) of the Redis server this entity's pool was filled in. */
  readonly epoch: string;
  /** Ids pushed into the pool since it was last reset: `pushed − LLEN` is what takes and direct pops took. */
  readonly pushed: string;
  /** The pool while a push appends to it, and an accepted push's marker: they exist only inside the push's MULTI. */
  readonly pushing: string;
  readonly pushOpen: string;
  /** The pool while a take pops from it (idpool_take_open / _close): it exists only inside the take's MULTI. */
  readonly taking: string;
}

export const DEFAULT_PREFIX = 'idpool';
/** What IDPOOL_REDIS_KEY_PREFIX may be: no braces (they would move the hash tag), no space; short, as it starts every key. */
export const PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The start of every key of one entity, its hash tag. */
const tagged = (entityKey: string, prefix: string) => `${prefix}:{${entityKey}}`;

export function entityKeys(entityKey: string, prefix = DEFAULT_PREFIX): EntityKeys {
  const base = tagged(entityKey, prefix);
  return {
    ids: `${base}:ids`,
    fence: `${base}:fence`,
    lock: `${base}:lock`,
    ratePrefix: `${base}:rate:`,
    epoch: `${base}:server`,
    pushed: `${base}:pushed`,
    pushing: `${base}:pushing`,
    pushOpen: `${base}:push_open`,
    taking: `${base}:taking`,
  };
}

/** Keys of one business-number entity (docs/numbers.md): now's numbers wait in the plain pool's `ids`, popped as plain ids are. */
export interface NumberKeys extends Pick<
  EntityKeys,
  'ids' | 'epoch' | 'ratePrefix' | 'pushed' | 'pushing' | 'pushOpen'
> {
  /** The period table: the live and the staged period, their bounds, whether full, the newest period gone live. */
  readonly periods: string;
  /** Highest sequence ever pushed, per period id (a hash). */
  readonly fence: string;
  /** Formatted numbers of the next period, until it begins and they become `ids`. */
  readonly staged: string;
}

/** A gapless series' high-water record (docs/numbers.md "Gapless series"): per period, the highest sequence committed (`ZADD GT`). */
export function gaplessHighWaterKey(entityKey: string, prefix = DEFAULT_PREFIX): string {
  return `${tagged(entityKey, prefix)}:g:hw`;
}

export function numberKeys(entityKey: string, prefix = DEFAULT_PREFIX): NumberKeys {
  const { ids, epoch, ratePrefix, pushed, pushing, pushOpen } = entityKeys(entityKey, prefix);
  const base = tagged(entityKey, prefix);
  return {
    ...{ ids, epoch, ratePrefix, pushed, pushing, pushOpen },
    periods: `${base}:n:periods`,
    fence: `${base}:n:fence`,
    staged: `${base}:n:staged`,
  };
}

/** Keys of one `Idempotency-Key` of one entity (see `idempotency/redis-store.ts`). */
export interface IdempotencyKeys {
  /** Held (SET NX, short TTL) while the first request with this key runs. */
  readonly claim: string;
  /** The stored answer, JSON `{count, ids}`; the first one written wins. */
  readonly answer: string;
  /** Sorted set of this entity's stored answers (`requestKey\nbytes`) by time, to cap how many are kept. */
  readonly index: string;
  /** Bytes of this entity's answers in {@link index}, to cap them. */
  readonly bytes: string;
  /** The answer key of another request key of the same entity. */
  answerOf(requestKey: string): string;
  /** `answerOf(k)` less `k`: what the store function prepends to a request key. */
  readonly answerPrefix: string;
}

/** `requestKey` is the client's header value (printable ASCII); it ends the key, so no two values collide. */
export function idempotencyKeys(entityKey: string, requestKey: string, prefix = DEFAULT_PREFIX): IdempotencyKeys {
  const base = `${tagged(entityKey, prefix)}:idem`;
  const answerPrefix = `${base}:answer:`;
  return {
    claim: `${base}:claim:${requestKey}`,
    answer: `${answerPrefix}${requestKey}`,
    index: `${base}:index`,
    bytes: `${base}:bytes`,
    answerOf: (other) => `${answerPrefix}${other}`,
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
export interface FleetKeys {
  /** Stream of every instance's alarm records, capped (XADD MAXLEN ~). */
  readonly alarms: string;
  /** Hash of heartbeats: field = instance id, value = its JSON heartbeat. */
  readonly instances: string;
  /** Hash of each instance's recent take rates per entity (JSON), written with its heartbeat, read by pages only. */
  readonly rates: string;
}

export function fleetKeys(prefix = DEFAULT_PREFIX): FleetKeys {
  const base = `${prefix}:{fleet}`;
  return { alarms: `${base}:alarms`, instances: `${base}:instances`, rates: `${base}:rates` };
}

/** The worker leases' second record, which a database restore cannot undo (docs/ha.md); one slot, so one function touches both. */
export interface WorkerKeys {
  /** Hash: worker id → token of the lease granted last. */
  readonly holders: string;
  /** Sorted set: worker id → the highest Unix ms any lease of it may have used. */
  readonly ceilings: string;
}

export function workerKeys(prefix = DEFAULT_PREFIX): WorkerKeys {
  const base = `${prefix}:{workers}`;
  return { holders: `${base}:holders`, ceilings: `${base}:ceilings` };
}

/** Which deployment (the id recorded in its database) owns the keys under this prefix (see `redis/deployment-claim.ts`). */
export function deploymentKey(prefix = DEFAULT_PREFIX): string {
  return `${prefix}:deployment`;
}
