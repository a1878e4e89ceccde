import type { Request, RequestHandler } from 'express';
import { type EntityConfig, secretMatches } from '../entities/entity';
import { UnauthorizedError } from '../errors';
import { type AuthFailureLimiter, bearerToken, tokensEqual } from './auth';
import type { HttpDeps } from './deps';
import { entityKeyParam } from './params';

/** Compared against when the key is unknown, so both failures cost the same. */
const UNKNOWN_KEY_HASH = '0'.repeat(64);

/** The checks that stand in front of routes; every failure counts against the client address. */
export interface Guards {
  /** Middleware: the admin token or 401. */
  requireAdmin: RequestHandler;
  /**
   * The entity named in the path, authenticated by its secret. An unknown key
   * and a wrong secret get the same 401 (and take the same hash compare), so
   * keys cannot be probed.
   */
  authenticatedEntity(req: Request): Promise<EntityConfig>;
  /** The bearer token must equal `expected`, or 401 with `message`. */
  requireToken(req: Request, expected: string, message: string): Promise<void>;
}

/** Builds the guards on one failure limiter, so probing any route slows every route down. */
export function createGuards(deps: Pick<HttpDeps, 'registry' | 'adminToken'>, authFailures: AuthFailureLimiter): Guards {
  // The socket's address: no `trust proxy`, so a client cannot pick its own.
  const clientAddress = (req: Request) => req.socket.remoteAddress ?? 'unknown';

  const requireToken = (req: Request, expected: string, message: string) =>
    authFailures.guard(clientAddress(req), () => {
      if (!tokensEqual(bearerToken(req), expected)) throw new UnauthorizedError(message);
    });

  return {
    requireToken,
    requireAdmin: async (req, _res, next) => {
      await requireToken(req, deps.adminToken, 'invalid admin token');
      next();
    },
    async authenticatedEntity(req) {
      const key = entityKeyParam(req);
      return authFailures.guard(clientAddress(req), async () => {
        const token = bearerToken(req);
        const found = await deps.registry.find(key);
        const matches = secretMatches(token, found?.secretHash ?? UNKNOWN_KEY_HASH);
        if (!found || !matches) throw new UnauthorizedError('unknown entity key or invalid secret');
        return found;
      });
    },
  };
}
