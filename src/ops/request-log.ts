import { randomBytes } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Histogram } from 'prom-client';
import type { RequestLogMode } from './settings';
import type { Logger } from '../logger';

export interface RequestObserverOptions {
  log: Logger;
  /** `all`; `errors`: non-2xx and slow ones, repeats folded into a line a second (`RepeatedLines`); `off`. */
  mode: RequestLogMode;
  slowMs: number;
  /** Monotonic milliseconds: the service clock's (a test's own decides which request was slow). */
  now: () => number;
  duration: Histogram<'method' | 'route' | 'status'>;
}

/** A client's own request id is kept when it looks like one (no log injection, bounded size). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Route labels ever seen are few; this only guards against a bug making them unbounded. */
const MAX_SERIES = 2000;

/**
 * One histogram observation per request and, as `mode` says, one log line: method, route template, path (never
 * query, headers or body: no secret reaches the log), status, duration, request id (also `X-Request-Id`).
 * Cheap on purpose: the single-id route answers in tens of microseconds.
 */
export function requestObserver(o: RequestObserverOptions): RequestHandler {
  // Ids are <boot>-<counter>: unique per process start without a random draw per request.
  const boot = randomBytes(4).toString('hex');
  let counter = 0;
  const children = new Map<string, ReturnType<typeof o.duration.labels>>();
  const routeLabels = new WeakMap<object, string>();
  const { now, slowMs } = o;
  // A client retrying a 429 at once, ignoring Retry-After, was 99.9 % of the log in a 90 s run of twelve clients.
  const log = o.mode === 'errors' ? o.log.child({}, { foldInfo: true }) : o.log;

  const routeOf = (req: Request): string => {
    const route = req.route as { path?: unknown } | undefined;
    if (!route || typeof route.path !== 'string') return 'unmatched';
    let label = routeLabels.get(route);
    if (label === undefined) routeLabels.set(route, (label = mountedPath(req.originalUrl, route.path)));
    return label;
  };

  return (req: Request, res: Response, next: NextFunction) => {
    const started = now();
    const given = req.headers['x-request-id'];
    const reqId = typeof given === 'string' && REQUEST_ID.test(given) ? given : `${boot}-${(++counter).toString(36)}`;
    res.setHeader('X-Request-Id', reqId);
    res.once('close', () => {
      const ms = now() - started;
      const route = routeOf(req);
      const status = res.writableFinished ? res.statusCode : 499;
      const key = `${req.method} ${route} ${status}`;
      let child = children.get(key);
      if (!child) {
        if (children.size >= MAX_SERIES) children.clear();
        child = o.duration.labels(req.method, route, String(status));
        children.set(key, child);
      }
      child.observe(ms / 1000);
      if (o.mode === 'off' || (o.mode === 'errors' && status >= 200 && status < 300 && ms < slowMs)) return;
      const line = {
        reqId,
        method: req.method,
        route,
        path: pathOnly(req.originalUrl),
        status,
        ms: Math.round(ms * 1000) / 1000,
      };
      log[status >= 500 ? 'warn' : 'info'](line, 'request');
    });
    next();
  };
}

/** The path without its query string, bounded (the query may carry anything a client put there). */
function pathOnly(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path.length > 256 ? `${path.slice(0, 256)}…` : path;
}

/** The route template after its router's static mount path: `/admin/apps/foo` by `/apps/:key` is `/admin/apps/:key`. */
export function mountedPath(originalUrl: string, routePath: string): string {
  const segments = pathOnly(originalUrl).split('/').filter(Boolean);
  const routeSegments = routePath.split('/').filter(Boolean).length;
  const mount = segments.slice(0, Math.max(0, segments.length - routeSegments));
  return `${mount.length ? `/${mount.join('/')}` : ''}${routePath === '/' && mount.length ? '' : routePath}`;
}
