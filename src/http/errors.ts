import type { ErrorRequestHandler, Response } from 'express';
import { IdpoolError, InvalidRequestError, PayloadTooLargeError, UnavailableError } from '../errors';
import type { Logger } from '../logger';
import { dependencyFailure } from './dependency-failure';
import { scrub } from './readiness';

export function sendError(res: Response, err: IdpoolError): void {
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  res.status(err.statusCode).json({ error: { code: err.code, message: err.message } });
}

/**
 * A dependency that is down fails every request: one alarm line per kind
 * every this many ms (with how many requests it covered), not one per request.
 */
const DEPENDENCY_ALARM_EVERY_MS = 10_000;

/** Turns any error into the JSON error of docs/design.md; logs only what is our fault or a dependency's. */
export function errorHandler(log: Logger, now: () => number = Date.now): ErrorRequestHandler {
  const alarms = new Map<string, { at: number; suppressed: number }>();
  const dependencyAlarm = (kind: string, err: { message?: unknown }, path: string) => {
    const t = now();
    const last = alarms.get(kind);
    if (last && t - last.at < DEPENDENCY_ALARM_EVERY_MS) {
      last.suppressed++;
      return;
    }
    alarms.set(kind, { at: t, suppressed: 0 });
    log.error(
      {
        alarm: 'dependency_unavailable',
        kind,
        path,
        err: String(err.message ?? err),
        requestsSinceLastAlarm: (last?.suppressed ?? 0) + 1,
      },
      'a dependency (database or Redis) is unavailable; answering 503',
    );
  };
  return (err, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof IdpoolError) {
      if (err.statusCode < 500) return sendError(res, err);
      const detail = err instanceof UnavailableError ? err.detail : undefined;
      log.warn({ code: err.code, method: req.method, path: req.path, err: err.message, detail }, 'request failed');
      // The detail stays in the log; the message loses anything host-like (clients may be anyone who reaches the port).
      return sendError(res, new IdpoolError(err.statusCode, err.code, scrub(err.message), err.retryAfterSeconds));
    }
    // body-parser marks its own errors with a 4xx status and a type.
    if (err?.type === 'entity.too.large')
      return sendError(res, new PayloadTooLargeError(`request body larger than ${err.limit} bytes`));
    if (err?.type === 'entity.parse.failed')
      return sendError(res, new InvalidRequestError('request body is not valid JSON'));
    if (typeof err?.status === 'number' && err.status >= 400 && err.status < 500) {
      return sendError(res, new InvalidRequestError(String(err.message ?? 'bad request')));
    }
    const kind = dependencyFailure(err);
    if (kind) {
      dependencyAlarm(kind, err, req.path);
      return sendError(res, new UnavailableError('a dependency (database or Redis) is unavailable; retry shortly', 1));
    }
    log.error({ method: req.method, path: req.path, err: String(err?.stack ?? err) }, 'internal error');
    res.status(500).json({ error: { code: 'internal', message: 'internal error' } });
  };
}
