import type { ErrorRequestHandler, Request, Response } from 'express';
import { IdpoolError, InvalidRequestError, PayloadTooLargeError, UnavailableError, errorMessage } from '../errors';
import type { Logger } from '../logger';
import { scrub } from './readiness';

export function sendError(res: Response, err: IdpoolError): void {
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  res.status(err.statusCode).json({ error: { code: err.code, message: err.message } });
}

/**
 * Redis error replies that mean "not now", never "bad request": the server
 * is a replica (READONLY), still loading its data set (LOADING), full under
 * noeviction (OOM), cluster or replication trouble (CLUSTERDOWN, TRYAGAIN,
 * MASTERDOWN, NOREPLICAS when min-replicas-to-write is unmet), failing to
 * persist (MISCONF) or busy running a long script (BUSY).
 */
const REDIS_REPLY = /^(READONLY|LOADING|OOM|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|NOREPLICAS|MISCONF|BUSY)\b/;
const CLUSTER_GAVE_UP =
  /^Too many Cluster redirections\. Last error: (?:ReplyError: )?(READONLY|LOADING|OOM|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|NOREPLICAS|MISCONF|BUSY)\b/;
// Socket and driver codes of an unreachable, restarting or overloaded
// dependency (Node, mysql2, better-sqlite3).
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_QUERY_INTERRUPTED',
  'ER_CONNECTION_KILLED',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);
const CONNECTION_MESSAGES =
  /Connection is closed|Stream isn't writeable|enableOfflineQueue|Command timed out|connect ECONNREFUSED|Reached the max retries|Pool is closed|Can't add new command when connection is in closed state|Connection lost|read ECONNRESET|database is locked|Query inactivity timeout|All sentinels are unreachable|Failed to refresh slots cache|Too many Cluster redirections|Cluster isn't ready|None of startup nodes is available|statement timed out/i;

/**
 * What kind of dependency failure `err` is (`redis_readonly`, `redis_oom`,
 * …, `connection`), or undefined when it is not one. These are answered
 * 503 with Retry-After: a dependency is down or refusing writes for now.
 */
export function dependencyFailure(err: unknown): string | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const e = err as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown };
  const message = typeof e.message === 'string' ? e.message : '';
  // ioredis gives up on a Cluster after too many redirections and names the last reply.
  const reply = REDIS_REPLY.exec(message) ?? CLUSTER_GAVE_UP.exec(message);
  if (reply) return `redis_${reply[1].toLowerCase()}`;
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return 'connection';
  if (CONNECTION_MESSAGES.test(message)) return 'connection';
  if (e.driverError !== undefined) return dependencyFailure(e.driverError);
  return e.cause !== undefined && e.cause !== err ? dependencyFailure(e.cause) : undefined;
}

/**
 * A dependency that is down fails every request: one alarm line per kind
 * every this many ms (with how many requests it covered), not one per request.
 */
const DEPENDENCY_ALARM_EVERY_MS = 10_000;

/** Writes an error the way one protocol does: idpool's JSON (`sendError`), or another's (Leaf's, `routes/leaf.ts`). */
export type ErrorAnswer = (req: Request, res: Response, err: IdpoolError) => void;

/** Turns any error into the JSON error of docs/design.md; logs only what is our fault or a dependency's. */
export function errorHandler(log: Logger, now: () => number = Date.now): ErrorRequestHandler {
  return errorFaces(log, now)((_req, res, err) => sendError(res, err));
}

/**
 * One classification of errors, several faces: every error becomes the
 * IdpoolError idpool answers (a dependency fault 503, anything unknown 500,
 * logged and alarmed once here), then `answer` writes it in its protocol's
 * format. The faces share one alarm throttle.
 */
export function errorFaces(log: Logger, now: () => number = Date.now): (answer: ErrorAnswer) => ErrorRequestHandler {
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
      dependencyAlarm(kind, err, req.path);
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
