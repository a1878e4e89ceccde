/** Invalid configuration: start-up stops with this one line, naming the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

/** Errors that reach a client: HTTP status and the stable `code` of docs/design.md, answered by `http/errors.ts`. */
export class IdpoolError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    /** Seconds a client should wait before retrying (429/503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The base of an error whose status and code are fixed, made with its message alone (named by `new.target`). */
const fixedError = (statusCode: number, code: string): new (message: string) => IdpoolError =>
  class extends IdpoolError {
    constructor(message: string) {
      super(statusCode, code, message);
    }
  };

export class InvalidRequestError extends fixedError(400, 'invalid_request') {}
/** Authenticated, but this credential may not do this (the ops token on a write). */
export class ForbiddenError extends fixedError(403, 'forbidden') {}
export class NotFoundError extends fixedError(404, 'not_found') {}
export class ConflictError extends fixedError(409, 'conflict') {}
/** A body that is not JSON where JSON is expected: never read as no body at all. */
export class UnsupportedMediaTypeError extends fixedError(415, 'unsupported_media_type') {}

export class UnauthorizedError extends IdpoolError {
  constructor(message = 'missing or invalid bearer token') {
    super(401, 'unauthorized', message);
  }
}

export class PayloadTooLargeError extends IdpoolError {
  constructor(message = 'request body too large') {
    super(413, 'payload_too_large', message);
  }
}

export class RateLimitedError extends IdpoolError {
  constructor(message: string, retryAfterSeconds: number) {
    super(429, 'rate_limited', message, retryAfterSeconds);
  }
}

export class PoolExhaustedError extends IdpoolError {
  constructor(message: string, retryAfterSeconds = 1) {
    super(503, 'pool_exhausted', message, retryAfterSeconds);
  }
}

export class UnavailableError extends IdpoolError {
  constructor(
    message: string,
    retryAfterSeconds = 1,
    /** What failed, for the log only: drivers name hosts, ports and users (`connect ECONNREFUSED 10.0.0.5:5432`). */
    readonly detail?: string,
  ) {
    super(503, 'unavailable', message, retryAfterSeconds);
  }
}

/** An entity served nowhere until an admin releases it (docs/migrating.md): hence Retry-After a minute. */
class EntityHeldError extends IdpoolError {
  constructor(key: string, reason: string) {
    super(503, 'entity_held', `entity "${key}" is held and serves no ids: ${reason.replaceAll('KEY', key)}`, 60);
  }
}

/** The one check every way ids leave (a take, a segment lease; the refiller skips it too): 503 `entity_held`. */
export function refuseHeld(entity: { readonly key: string; readonly held?: string | null }): void {
  if (entity.held) throw new EntityHeldError(entity.key, entity.held);
}

/** The message of anything thrown: an Error's (or an error-like object's) message, else the value as text. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null && 'message' in err && typeof err.message === 'string')
    return err.message;
  return String(err);
}

/** A business-number period has handed out every sequence its width holds: nothing more until the next period (docs/numbers.md). */
export class PeriodExhaustedError extends IdpoolError {
  constructor(message: string, retryAfterSeconds: number) {
    super(503, 'period_exhausted', message, retryAfterSeconds);
  }
}

/** Fewer business numbers left in the period than asked: a smaller take can still be served, so no alarm. */
export class PeriodShortError extends IdpoolError {
  constructor(entityKey: string, period: string, count: number, left: number) {
    super(
      409,
      'period_short',
      `${entityKey}: period ${period} has ${left} numbers left, fewer than the ${count} asked for; ask for ${left} or fewer, or wait for the next period`,
    );
  }
}

/**
 * A gapless series on a face that cannot keep its promise (docs/numbers.md "Gapless series"): Leaf's and Tinyid's
 * routes (a retry would burn a number) and segment leases (a client issuing alone writes no ledger).
 */
export class GaplessNotServedError extends IdpoolError {
  constructor(key: string, where: string) {
    super(
      409,
      'gapless_not_served_here',
      `gapless_not_served_here: entity "${key}" is a gapless series, not served ${where}: take its numbers with POST /apps/${key}/ids and an Idempotency-Key`,
    );
  }
}
