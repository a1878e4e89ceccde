import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, Request, Response } from 'express';
import { IdpoolError, InvalidRequestError, PayloadTooLargeError, UnavailableError, errorMessage } from '../errors';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { RepeatLimiter } from '../repeat-limiter';
import { dependencyFailure } from './dependency-failure';
import { scrub } from './readiness';

/** A dependency down fails every request: one alarm line per kind this often (counting them), not one per request. */
const DEPENDENCY_ALARM_EVERY_MS = 10_000;

/** Writes an error the way one protocol does: idpool's JSON (`sendError`), or another's (Leaf's, Tinyid's). */
export type ErrorAnswer = (req: Request, res: Response, err: IdpoolError) => void;

/** idpool's own face: `{"error": {"code", "message"}}` with the error's status and `Retry-After`. */
export const sendError: ErrorAnswer = (_req, res, err) => {
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  res.status(err.statusCode).json({ error: { code: err.code, message: err.message } });
};

/** Spring Boot's error body (`DefaultErrorAttributes`), as Leaf's and Tinyid's servers answer. */
export function sendSpringError(
  req: Request,
  res: Response,
  timestamp: number,
  status: 400 | 500,
  message: string,
  exception?: string,
): void {
  res.status(status).setHeader('Content-Type', 'application/json;charset=UTF-8');
  const path = req.originalUrl.split('?')[0];
  res.end(JSON.stringify({ timestamp, status, error: STATUS_CODES[status], exception, message, path }));
}

/**
 * One classification of errors, several faces: every error becomes an IdpoolError (a dependency fault 503, anything
 * unknown 500, logged and alarmed here), which `answer` writes in its protocol's format; one 503 alarm limiter for all.
 */
export function errorFaces(log: Logger, clock: Pick<Clock, 'monotonic'>): (answer: ErrorAnswer) => ErrorRequestHandler {
  // Kinds are a handful (`dependencyFailure`'s); the bound is only a guard.
  const alarms = new RepeatLimiter(clock, { windowMs: DEPENDENCY_ALARM_EVERY_MS, maxKeys: 100 });
  const classify = (err: unknown, req: Request): IdpoolError => {
    if (err instanceof IdpoolError) {
      if (err.statusCode < 500) return err;
      const detail = err instanceof UnavailableError ? err.detail : undefined;
      log.warn({ code: err.code, method: req.method, path: req.path, err: err.message, detail }, 'request failed');
      // The detail stays in the log; the message loses anything host-like (clients may be anyone who reaches the port).
      return new IdpoolError(err.statusCode, err.code, scrub(err.message), err.retryAfterSeconds);
    }
    // body-parser marks its own errors with a 4xx status and a type.
    const marked = err as { type?: unknown; limit?: number; status?: unknown; stack?: unknown } | null | undefined;
    if (marked?.type === 'entity.too.large')
      return new PayloadTooLargeError(`request body larger than ${marked.limit ?? 0} bytes`);
    if (marked?.type === 'entity.parse.failed') return new InvalidRequestError('request body is not valid JSON');
    if (typeof marked?.status === 'number' && marked.status >= 400 && marked.status < 500)
      return new InvalidRequestError(err instanceof Error ? err.message : 'bad request');
    const kind = dependencyFailure(err);
    if (kind) {
      const suppressed = alarms.admit(kind);
      if (suppressed !== undefined)
        log.error(
          {
            alarm: 'dependency_unavailable',
            kind,
            path: req.path,
            err: errorMessage(err),
            requestsSinceLastAlarm: suppressed + 1,
          },
          'a dependency (database or Redis) is unavailable; answering 503',
        );
      return new UnavailableError('a dependency (database or Redis) is unavailable; retry shortly', 1);
    }
    log.error(
      { method: req.method, path: req.path, err: typeof marked?.stack === 'string' ? marked.stack : String(err) },
      'internal error',
    );
    return new IdpoolError(500, 'internal', 'internal error');
  };
  return (answer) => (err: unknown, req, res, _next) => {
    if (res.headersSent) return;
    answer(req, res, classify(err, req));
  };
}
