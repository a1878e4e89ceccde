import type { ErrorRequestHandler, Response } from 'express';
import { IdpoolError, InvalidRequestError, PayloadTooLargeError, UnavailableError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import { dependencyFailure } from './dependency-failure';
import { scrub } from './readiness';

function sendError(res: Response, err: IdpoolError): void {
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
  const dependencyAlarm = (kind: string, err: unknown, path: string) => {
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
        err: errorMessage(err),
        requestsSinceLastAlarm: (last?.suppressed ?? 0) + 1,
      },
      'a dependency (database or Redis) is unavailable; answering 503',
    );
  };
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof IdpoolError) {
      if (err.statusCode < 500) {
        sendError(res, err);
        return;
      }
      const detail = err instanceof UnavailableError ? err.detail : undefined;
      log.warn({ code: err.code, method: req.method, path: req.path, err: err.message, detail }, 'request failed');
      // The detail stays in the log; the message loses anything host-like (clients may be anyone who reaches the port).
      sendError(res, new IdpoolError(err.statusCode, err.code, scrub(err.message), err.retryAfterSeconds));
      return;
    }
    // body-parser marks its own errors with a 4xx status and a type.
    const marked = err as { type?: unknown; limit?: number; status?: unknown; stack?: unknown } | null | undefined;
    if (marked?.type === 'entity.too.large') {
      sendError(res, new PayloadTooLargeError(`request body larger than ${marked.limit ?? 0} bytes`));
      return;
    }
    if (marked?.type === 'entity.parse.failed') {
      sendError(res, new InvalidRequestError('request body is not valid JSON'));
      return;
    }
    if (typeof marked?.status === 'number' && marked.status >= 400 && marked.status < 500) {
      sendError(res, new InvalidRequestError(err instanceof Error ? err.message : 'bad request'));
      return;
    }
    const kind = dependencyFailure(err);
    if (kind) {
      dependencyAlarm(kind, err, req.path);
      sendError(res, new UnavailableError('a dependency (database or Redis) is unavailable; retry shortly', 1));
      return;
    }
    log.error(
      { method: req.method, path: req.path, err: typeof marked?.stack === 'string' ? marked.stack : String(err) },
      'internal error',
    );
    res.status(500).json({ error: { code: 'internal', message: 'internal error' } });
  };
}
