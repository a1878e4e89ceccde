import express from 'express';
import { systemClock } from '../clock';
import { NotFoundError } from '../errors';
import { AuthFailureLimiter, ServiceTokens } from './auth';
import type { HttpDeps } from './deps';
import { errorFaces, jsonError } from './errors';
import { createGuards } from './guards';
import { registerAdminRoutes } from './routes/admin';
import { registerIdRoutes, takeFastPath, takeHandler } from './routes/ids';
import { registerLeafRoutes } from './routes/leaf';
import { BODY_LIMIT_BYTES } from './settings';
import { registerOpsRoutes } from './routes/ops';
import { registerSegmentRoutes } from './routes/segments';
import { registerTinyidRoutes } from './routes/tinyid';

export type { HttpDeps, ReadinessReport, SnowflakeDecoder } from './deps';

/** The HTTP service: request middleware, the route groups, then 404 and the one error handler. */
export function createHttpApp(deps: HttpDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (deps.observe) app.use(deps.observe);
  const draining = deps.draining;
  app.use((_req, res, next) => {
    // Answers carry secrets (register, rotate) and live state: no cache keeps them.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (draining?.()) res.setHeader('Connection', 'close');
    next();
  });

  const clock = deps.clock ?? systemClock;
  const tokens = new ServiceTokens({ admin: deps.adminToken, ops: deps.opsToken, metrics: deps.metricsToken });
  const guards = createGuards(deps, tokens, deps.authFailures ?? new AuthFailureLimiter(clock), deps.log);
  const take = takeHandler(deps, guards);
  // The take route's common form skips the body parser and the router (src/http/routes/ids.ts).
  app.use(takeFastPath(take));
  app.use(express.json({ limit: BODY_LIMIT_BYTES, strict: false }));
  registerIdRoutes(app, deps, guards, take);
  registerSegmentRoutes(app, deps, guards);
  registerAdminRoutes(app, deps, guards);
  registerOpsRoutes(app, deps, guards);
  const errors = errorFaces(deps.log, clock);
  if (deps.compat?.includes('leaf')) registerLeafRoutes(app, deps, errors, clock);
  if (deps.compat?.includes('tinyid')) registerTinyidRoutes(app, deps, guards, errors, clock);

  app.use((req, _res) => {
    throw new NotFoundError(`no route ${req.method} ${req.path}`);
  });
  app.use(errors(jsonError));
  return app;
}
