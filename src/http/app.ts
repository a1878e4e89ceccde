import express from 'express';
import { NotFoundError, UnsupportedMediaTypeError } from '../errors';
import type { HttpDeps } from './deps';
import { errorFaces, sendError } from './errors';
import { createGuards } from './guards';
import { registerAdminRoutes } from './routes/admin';
import { registerIdRoutes, takeFastPath, takeHandler } from './routes/ids';
import { registerLeafRoutes } from './routes/leaf';
import { registerGaplessAdminRoutes, registerGaplessRoutes } from './routes/gapless';
import { BODY_LIMIT_BYTES } from './settings';
import { registerOpsRoutes } from './routes/ops';
import { registerSegmentRoutes } from './routes/segments';
import { registerTinyidRoutes } from './routes/tinyid';

export type { HttpDeps, ReadinessReport } from './deps';

/** idpool's own routes, which read JSON; Leaf's and Tinyid's keep their own conventions (Tinyid's forms). */
const NATIVE_PATHS = ['/apps', '/admin'];

/**
 * A body that is not JSON (a form, `text/plain`, curl's `-d` without a
 * `Content-Type`) would be left unread by express.json and the request
 * served as if it had none (`{"count":5}` answered with one id): 415 with
 * what to send instead. A request without a body goes on, so `POST
 * /apps/:key/ids` with none (or `?count=`) still takes.
 */
const jsonBodiesOnly: express.RequestHandler = (req, _res, next) => {
  // An empty body (fetch sends Content-Length: 0 on a bodiless POST) is none.
  const length = req.headers['content-length'];
  const body = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (body && !req.is('application/json'))
    throw new UnsupportedMediaTypeError(
      `the body is sent as ${req.headers['content-type'] ?? 'no Content-Type'}; send JSON with Content-Type: application/json (or no body at all)`,
    );
  next();
};

/**
 * Which routes an app serves: all of them (one port), or, with
 * IDPOOL_ADMIN_PORT, `public` (everything but `/admin/*`, which answers 404
 * there) on the main port and `admin` (the admin API and the dashboard
 * alone) on the admin port.
 */
export type HttpFace = 'all' | 'public' | 'admin';

/** The HTTP service: request middleware, the route groups of `face`, then 404 and the one error handler. */
export function createHttpApp(deps: HttpDeps, face: HttpFace = 'all'): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(deps.observe);
  app.use((_req, res, next) => {
    // Answers carry secrets (register, rotate) and live state: no cache keeps them.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (deps.draining()) res.setHeader('Connection', 'close');
    next();
  });

  const guards = createGuards(deps);
  const errors = errorFaces(deps.log, deps.clock);
  // The take route's common form skips the body parser and the router (src/http/routes/ids.ts).
  if (face !== 'admin') app.use(takeFastPath(takeHandler(deps, guards)));
  app.use(NATIVE_PATHS, jsonBodiesOnly);
  app.use(express.json({ limit: BODY_LIMIT_BYTES, strict: false }));
  if (face !== 'admin') {
    registerIdRoutes(app, deps, guards);
    registerSegmentRoutes(app, deps, guards);
    registerGaplessRoutes(app, deps, guards);
    registerOpsRoutes(app, deps, guards);
    if (deps.compat.includes('leaf')) registerLeafRoutes(app, deps, errors);
    if (deps.compat.includes('tinyid')) registerTinyidRoutes(app, deps, guards, errors);
  }
  if (face !== 'public') {
    registerGaplessAdminRoutes(app, deps, guards);
    registerAdminRoutes(app, deps, guards);
  }

  app.use((req, _res) => {
    throw new NotFoundError(`no route ${req.method} ${req.path}`);
  });
  app.use(errors(sendError));
  return app;
}
