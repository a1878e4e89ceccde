import express from 'express';
import { systemClock } from '../clock';
import { NotFoundError } from '../errors';
import { AuthFailureLimiter, ServiceTokens } from './auth';
import type { HttpDeps } from './deps';
import { errorHandler } from './errors';
import { createGuards } from './guards';
import { registerAdminRoutes } from './routes/admin';
import { registerIdRoutes } from './routes/ids';
import { registerOpsRoutes } from './routes/ops';

export type { HttpDeps, ReadinessReport, SnowflakeIssuer } from './deps';

/** Largest JSON body accepted; registrations and counts are far smaller. */
const BODY_LIMIT = '16kb';

/** The HTTP service: request middleware, the route groups, then 404 and the one error handler. */
export function createHttpApp(deps: HttpDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (deps.observe) app.use(deps.observe);
  const draining = deps.draining;
  if (draining) {
    app.use((_req, res, next) => {
      if (draining()) res.setHeader('Connection', 'close');
      next();
    });
  }
  app.use((_req, res, next) => {
    // Answers carry secrets (register, rotate) and live state: no cache keeps them.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  app.use(express.json({ limit: BODY_LIMIT, strict: false }));

  const tokens = new ServiceTokens({ admin: deps.adminToken, ops: deps.opsToken, metrics: deps.metricsToken });
  const guards = createGuards(deps, tokens, deps.authFailures ?? new AuthFailureLimiter(deps.clock ?? systemClock), deps.log);
  registerIdRoutes(app, deps, guards);
  registerAdminRoutes(app, deps, guards);
  registerOpsRoutes(app, deps, guards);

  app.use((req, _res) => {
    throw new NotFoundError(`no route ${req.method} ${req.path}`);
  });
  app.use(errorHandler(deps.log));
  return app;
}
