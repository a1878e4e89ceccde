import type { RequestHandler } from 'express';
import { systemClock } from '../../src/clock';
import { AuthFailureLimiter } from '../../src/http/auth';
import type { HttpDeps } from '../../src/http/deps';
import { silentLogger } from '../../src/logger';

/** A part a test's app is not expected to reach: any use of it fails the request (500). */
function unreached(part: string): never {
  return new Proxy(
    {},
    {
      get: () => () => {
        throw new Error(`${part} reached in a test that gave none`);
      },
    },
  ) as never;
}

const passThrough: RequestHandler = (_req, _res, next) => next();

/** The app's dependencies for a unit test of a few routes: `parts` as given, every other part unreached. */
export function httpDeps(parts: Partial<HttpDeps> & Pick<HttpDeps, 'registry' | 'takes'>): HttpDeps {
  const clock = parts.clock ?? systemClock;
  return {
    idempotency: unreached('idempotency'),
    snowflake: unreached('snowflake'),
    leases: unreached('leases'),
    lines: unreached('lines'),
    numbers: unreached('numbers'),
    operations: unreached('operations'),
    observe: passThrough,
    draining: () => false,
    tokens: { admin: 'x'.repeat(32) },
    authFailures: new AuthFailureLimiter(clock),
    compat: [],
    clock,
    log: silentLogger,
    ...parts,
  };
}
