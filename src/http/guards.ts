import querystring from 'node:querystring';
import type { NextFunction, Request, Response } from 'express';
import { KEY_PATTERN } from '../entities/entity';
import { ForbiddenError, UnauthorizedError } from '../errors';
import { ServiceTokens, type TokenKind, bearerToken } from './auth';
import type { HttpDeps } from './deps';
import { entityKeyParam } from './params';

/** Methods that change nothing: the ops token may use them on `/admin`. */
const READS = new Set(['GET', 'HEAD']);

/** The checks that stand in front of routes; every failure counts against the client address. */
export type Guards = ReturnType<typeof createGuards>;

/** The admin API's writes, by method and path under `/admin`, as audit lines name them. */
const ADMIN_WRITES: readonly [method: string, path: RegExp, action: string][] = [
  ['POST', /^\/apps\/?$/, 'register'],
  ['PATCH', /^\/apps\/([^/]+)\/?$/, 'update'],
  ['DELETE', /^\/apps\/([^/]+)\/?$/, 'retire'],
  ['POST', /^\/apps\/([^/]+)\/secret\/?$/, 'rotate_secret'],
  ['POST', /^\/apps\/([^/]+)\/secrets\/?$/, 'add_secret'],
  ['POST', /^\/apps\/([^/]+)\/raise\/?$/, 'raise'],
  ['POST', /^\/apps\/([^/]+)\/hold\/?$/, 'hold'],
  ['POST', /^\/apps\/([^/]+)\/release\/?$/, 'release'],
  ['POST', /^\/apps\/([^/]+)\/finish\/?$/, 'finish_live'],
  ['POST', /^\/apps\/([^/]+)\/numbers\/reconcile\/?$/, 'reconcile_gapless'],
  ['DELETE', /^\/apps\/([^/]+)\/secrets\/[^/]+\/?$/, 'remove_secret'],
];

/** What an admin write does and to which entity (a valid key only), for its audit line; named from the request, so refused writes are named too. */
function adminWrite(req: Pick<Request, 'method' | 'path' | 'body'>): { action: string; entity?: string } {
  // Under the admin router the path has lost `/admin`; a route mounted on the app itself (the reconcile) still has it.
  const underAdmin = req.path.startsWith('/admin/') ? req.path.slice('/admin'.length) : req.path;
  for (const [method, path, action] of ADMIN_WRITES) {
    const m = req.method === method ? path.exec(underAdmin) : null;
    if (!m) continue;
    const named = m.at(1);
    // querystring.unescape never throws: what it cannot decode keeps a `%` or becomes U+FFFD, which no key has.
    const key: unknown =
      named === undefined ? (req.body as { key?: unknown } | undefined)?.key : querystring.unescape(named);
    return { action, entity: typeof key === 'string' && KEY_PATTERN.test(key) ? key : undefined };
  }
  return { action: `${req.method} ${req.path.slice(0, 256)}` };
}

/** Builds the guards on one failure limiter, so probing any route slows every route down. */
export function createGuards(deps: Pick<HttpDeps, 'registry' | 'tokens' | 'authFailures' | 'log'>) {
  const { authFailures, log } = deps;
  const tokens = new ServiceTokens(deps.tokens);
  // The socket's address: no `trust proxy`, so a client cannot pick its own.
  const clientAddress = (req: Request) => req.socket.remoteAddress ?? 'unknown';

  const requireToken = (req: Request, accepted: readonly TokenKind[], message: string) =>
    authFailures.guardToken(clientAddress(req), () => {
      const kind = tokens.kindOf(bearerToken(req), accepted);
      if (!kind) throw new UnauthorizedError(message);
      return kind;
    });

  // One line per admin write when its answer is sent; never the body: a register or rotate answer carries a secret.
  const auditLine = (req: Request, res: Response, token: TokenKind) => {
    const { action, entity } = adminWrite(req);
    res.once('close', () => {
      log.info(
        {
          audit: action,
          entity,
          reqId: res.getHeader('X-Request-Id'),
          address: clientAddress(req),
          tokenKind: token,
          status: res.writableFinished ? res.statusCode : 499,
        },
        'admin write',
      );
    });
  };

  const entityBySecret = (req: Request, key: string, secret: () => string) =>
    authFailures.guardSecret(clientAddress(req), async () => {
      const found = await deps.registry.authenticate(key, secret());
      if (!found) throw new UnauthorizedError('unknown entity key or invalid secret');
      return found;
    });

  return {
    /** The bearer token must be one of the `accepted` kinds, or 401 with `message`; resolves to its kind. */
    requireToken,
    /** The admin API's middleware: the admin token, or the ops token on a read (403 on a write); each write audited. */
    requireAdmin: async (req: Request, res: Response, next: NextFunction) => {
      const token = await requireToken(req, ['admin', 'ops'], 'invalid admin token');
      if (!READS.has(req.method)) {
        auditLine(req, res, token);
        if (token !== 'admin')
          throw new ForbiddenError('the ops token is read-only; this change needs the admin token');
      }
      next();
    },
    /** The entity of the path by its bearer secret; an unknown key and a wrong one get the same 401 and hash compare. */
    authenticatedEntity: (req: Request) => entityBySecret(req, entityKeyParam(req), () => bearerToken(req)),
    /** As {@link authenticatedEntity}, for protocols carrying the key and secret elsewhere (Tinyid's `token`). */
    entityBySecret: (req: Request, key: string, secret: string) => entityBySecret(req, key, () => secret),
  };
}
