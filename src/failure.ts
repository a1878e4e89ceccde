/**
 * What a dependency's error means, from what each driver guarantees (codes, SQLSTATE, a Redis reply's first word),
 * never message text. One classifier per driver: `db/errors/` and `redis/errors.ts`.
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
  | 'missing_function'
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

/** Node's socket and DNS error codes, which every driver passes on as they are. */
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
 * `err` and what it wraps, outermost first: TypeORM's `driverError`, an ioredis EXECABORT's `previousErrors`,
 * ioredis Cluster's `lastNodeError`, an Error's `cause`.
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
 * What `err` means: the innermost failure that is not a bug (the OOM inside an EXECABORT, the ECONNREFUSED under
 * "Connection is closed."), else the first classification; undefined when no classifier knows any.
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
