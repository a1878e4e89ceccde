/**
 * Errors that reach a client. Each carries the HTTP status and the stable
 * `code` of DESIGN.md; one handler in `http/errors.ts` turns them into
 * `{"error": {"code", "message"}}` and logs only the 5xx.
 */
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

export class InvalidRequestError extends IdpoolError {
  constructor(message: string) {
    super(400, 'invalid_request', message);
  }
}

export class UnauthorizedError extends IdpoolError {
  constructor(message = 'missing or invalid bearer token') {
    super(401, 'unauthorized', message);
  }
}

export class NotFoundError extends IdpoolError {
  constructor(message: string) {
    super(404, 'not_found', message);
  }
}

export class ConflictError extends IdpoolError {
  constructor(message: string) {
    super(409, 'conflict', message);
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
  constructor(message: string, retryAfterSeconds = 1) {
    super(503, 'unavailable', message, retryAfterSeconds);
  }
}
