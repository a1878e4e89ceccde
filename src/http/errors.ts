import type { ErrorRequestHandler, Response } from 'express';
import { IdpoolError, InvalidRequestError, PayloadTooLargeError, UnavailableError } from '../errors';
import type { Logger } from '../logger';

export function sendError(res: Response, err: IdpoolError): void {
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  res.status(err.statusCode).json({ error: { code: err.code, message: err.message } });
}

// Failures that mean a dependency (MySQL/SQLite, Redis) is unreachable or
// overloaded, not a fault in idpool: answered 503 with Retry-After.
const DEPENDENCY_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'PROTOCOL_CONNECTION_LOST', 'ER_CON_COUNT_ERROR', 'SQLITE_BUSY', 'SQLITE_LOCKED', 'ER_LOCK_WAIT_TIMEOUT', 'ER_LOCK_DEADLOCK']);
const DEPENDENCY_MESSAGES = /Connection is closed|Stream isn't writeable|enableOfflineQueue|Command timed out|connect ECONNREFUSED|Reached the max retries|Pool is closed|Can't add new command when connection is in closed state|Connection lost|read ECONNRESET|database is locked/i;

export function isDependencyFailure(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown; driverError?: unknown; errno?: unknown };
  if (typeof e.code === 'string' && DEPENDENCY_CODES.has(e.code)) return true;
  if (typeof e.message === 'string' && DEPENDENCY_MESSAGES.test(e.message)) return true;
  return e.driverError !== undefined && isDependencyFailure(e.driverError);
}

/** Turns any error into the JSON error of DESIGN.md; logs only what is our fault or a dependency's. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof IdpoolError) {
      if (err.statusCode >= 500) log.warn({ code: err.code, method: req.method, path: req.path, err: err.message }, 'request failed');
      return sendError(res, err);
    }
    // body-parser marks its own errors with a 4xx status and a type.
    if (err?.type === 'entity.too.large') return sendError(res, new PayloadTooLargeError(`request body larger than ${err.limit} bytes`));
    if (err?.type === 'entity.parse.failed') return sendError(res, new InvalidRequestError('request body is not valid JSON'));
    if (typeof err?.status === 'number' && err.status >= 400 && err.status < 500) {
      return sendError(res, new InvalidRequestError(String(err.message ?? 'bad request')));
    }
    if (isDependencyFailure(err)) {
      log.error({ method: req.method, path: req.path, err: String(err.message ?? err) }, 'dependency unavailable');
      return sendError(res, new UnavailableError('a dependency (database or Redis) is unavailable; retry shortly', 1));
    }
    log.error({ method: req.method, path: req.path, err: String(err?.stack ?? err) }, 'internal error');
    res.status(500).json({ error: { code: 'internal', message: 'internal error' } });
  };
}
