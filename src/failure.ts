/**
 * What a dependency's error means for idpool, decided from what each driver
 * guarantees (error codes, SQLSTATE, the first word of a Redis reply, the
 * driver's own error classes), never from message text, which drivers
 * reword between releases. One classifier per driver: `db/errors/` (mysql2,
 * node-postgres, better-sqlite3) and `redis/errors.ts` (ioredis).
 */

/**
 * - `unavailable`: the dependency is down, unreachable, read-only or not serving (503, Retry-After);
 * - `busy`: it serves, but this statement lost a race or waited too long: a lock, a deadlock, a long script (503, Retry-After);
 * - `conflict`: the statement collided with existing data (a duplicate key);
 * - `invalid`: the data was refused (out of range, a constraint);
 * - `bug`: idpool asked something wrong (syntax, a wrong key type): a 500.
 */
export type FailureClass = 'unavailable' | 'busy' | 'conflict' | 'invalid' | 'bug';

/** The finer reason, for logs, alarms, readiness and the stores' own decisions. */
export type FailureKind =
  | 'refused'
  | 'timeout'
  | 'lost'
  | 'host_not_found'
  | 'auth'
  | 'read_only'
  | 'loading'
  | 'no_master'
  | 'cluster_down'
  | 'moved'
  | 'out_of_memory'
  | 'disk'
  | 'missing_script'
  | 'too_many_connections'
  | 'lock_timeout'
  | 'deadlock'
  | 'script_busy'
  | 'duplicate'
  | 'out_of_range'
  | 'constraint'
  | 'database_schema'
  | 'other';

export interface Failure {
  readonly class: FailureClass;
  readonly kind: FailureKind;
  /** A Redis reply's first word (`READONLY`), when the failure is one. */
  readonly reply?: string;
}

export const failure = (cls: FailureClass, kind: FailureKind, reply?: string): Failure =>
  reply === undefined ? { class: cls, kind } : { class: cls, kind, reply };

/** A driver's classifier: undefined when `err` is not that driver's. */
export type Classifier = (err: object) => Failure | undefined;

/**
 * Node's system error codes (`err.code` of a socket or DNS failure), which
 * every driver passes on as they are.
 */
const SYSTEM_CODES: Record<string, Failure> = {
  ECONNREFUSED: failure('unavailable', 'refused'),
  ECONNRESET: failure('unavailable', 'lost'),
  EPIPE: failure('unavailable', 'lost'),
  ECONNABORTED: failure('unavailable', 'lost'),
  ETIMEDOUT: failure('unavailable', 'timeout'),
  EHOSTUNREACH: failure('unavailable', 'refused'),
  ENETUNREACH: failure('unavailable', 'refused'),
  EHOSTDOWN: failure('unavailable', 'refused'),
  ENOTFOUND: failure('unavailable', 'host_not_found'),
  EAI_AGAIN: failure('unavailable', 'host_not_found'),
};

export function systemFailure(err: object): Failure | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && Object.hasOwn(SYSTEM_CODES, code) ? SYSTEM_CODES[code] : undefined;
}

/**
 * `err` and what it wraps, outermost first, by structure: TypeORM's
 * `QueryFailedError` keeps the driver's error as `driverError`, an ioredis
 * EXECABORT its commands' refusals as `previousErrors`, ioredis's Cluster
 * the last node's reply as `lastNodeError`, and an Error its `cause`.
 */
function* wrapped(err: unknown): Generator<object> {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0) {
    const e = queue.shift();
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    yield e;
    const w = e as { driverError?: unknown; previousErrors?: unknown; lastNodeError?: unknown; cause?: unknown };
    queue.push(w.driverError, w.lastNodeError);
    if (Array.isArray(w.previousErrors)) queue.push(w.previousErrors[0]);
    queue.push(w.cause);
  }
}

/**
 * What `err` means, from it or what it wraps: the innermost failure that is
 * not a bug (the driver's own reason under a wrapper: the OOM inside an
 * EXECABORT, the ECONNREFUSED under ioredis's "Connection is closed.", the
 * CLUSTERDOWN under "Too many Cluster redirections"), or else the first
 * classification; undefined when no classifier knows any of them.
 */
export function classifyWith(classifiers: readonly Classifier[], err: unknown): Failure | undefined {
  let first: Failure | undefined;
  let deepest: Failure | undefined;
  for (const e of wrapped(err)) {
    let found: Failure | undefined;
    for (const classify of classifiers) found ??= classify(e);
    found ??= systemFailure(e);
    first ??= found;
    if (found && found.class !== 'bug') deepest = found;
  }
  return deepest ?? first;
}

/** Whether the failure is the dependency's, not the request's: answered 503 with Retry-After. */
export function isRetryable(f: Failure | undefined): boolean {
  return f?.class === 'unavailable' || f?.class === 'busy';
}
