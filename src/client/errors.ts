/** Error codes the idpool service answers with (docs/design.md "HTTP API"). */
export type IdpoolErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'pool_exhausted'
  | 'period_exhausted'
  | 'entity_held'
  | 'gapless_ledger_behind'
  | 'unavailable'
  | 'internal'
  | (string & {});

/** Base of every error the client throws. */
export class IdpoolClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The service answered with an error status. */
export class IdpoolHttpError extends IdpoolClientError {
  constructor(
    /** HTTP status. */
    readonly status: number,
    /** The service's stable error code, e.g. `invalid_request`. */
    readonly code: IdpoolErrorCode,
    message: string,
    /** Base URL of the endpoint that answered. */
    readonly endpoint: string,
    /** From `Retry-After`, when the answer had one. */
    readonly retryAfterMs?: number,
  ) {
    super(`${endpoint}: ${status} ${code}: ${message}`);
  }
}

/** 400: the request was malformed (bad count, bad entity key, bad Idempotency-Key). */
export class IdpoolInvalidRequestError extends IdpoolHttpError {}
/** 401: the entity's secret is wrong (or was rotated). */
export class IdpoolUnauthorizedError extends IdpoolHttpError {}
/** 404: no such entity (never registered, or retired). */
export class IdpoolNotFoundError extends IdpoolHttpError {}
/** 409: e.g. an Idempotency-Key reused with a different count. */
export class IdpoolConflictError extends IdpoolHttpError {}
/** 429: the entity's ids-per-second limit; `retryAfterMs` says when to try again. Not retried by the client. */
export class IdpoolRateLimitedError extends IdpoolHttpError {}

/** One attempt took longer than `timeoutMs`. */
export class IdpoolTimeoutError extends IdpoolClientError {
  constructor(
    readonly endpoint: string,
    readonly timeoutMs: number,
  ) {
    super(`${endpoint}: no answer within ${timeoutMs} ms`);
  }
}

/** An endpoint could not be reached or its answer could not be read. */
export class IdpoolNetworkError extends IdpoolClientError {
  constructor(
    readonly endpoint: string,
    detail: string,
    cause?: unknown,
  ) {
    super(`${endpoint}: ${detail}`, { cause });
  }
}

/**
 * Every attempt failed or the deadline came first, or the entity was refused on every instance (`refused`).
 * `attempts` holds each failure in order; the message leads with `lastAnswer`, the last answer a service gave: a 503
 * says more than a refused connection after it.
 */
export class IdpoolUnavailableError extends IdpoolClientError {
  /** True when the answer concerns the entity alone and holds on every instance: asked once, no endpoint marked down. */
  readonly refused: boolean;

  constructor(
    readonly attempts: readonly IdpoolClientError[],
    reason: string,
    options: { refused?: boolean } = {},
  ) {
    const last = attempts.at(-1);
    const answer = lastAnswerOf(attempts);
    const answered = answer ? `; last answer: ${answer.message}` : '';
    const lastError = last && last !== answer ? `; last error: ${last.message}` : '';
    super(
      options.refused && answer
        ? `idpool unavailable: ${answer.message} (the same on every instance: not asked again)`
        : `idpool unavailable: ${reason}${answered}${lastError}`,
      { cause: answer ?? last },
    );
    this.refused = options.refused === true;
  }

  get lastError(): IdpoolClientError | undefined {
    return this.attempts.at(-1);
  }

  /** The last error answer of a service among the attempts, if any answered. */
  get lastAnswer(): IdpoolHttpError | undefined {
    return lastAnswerOf(this.attempts);
  }
}

function lastAnswerOf(attempts: readonly IdpoolClientError[]): IdpoolHttpError | undefined {
  return [...attempts].reverse().find((attempt) => attempt instanceof IdpoolHttpError);
}
