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

/**
 * 415 for a body express.json would leave unread (a form, curl's `-d`), which would else be served as if absent
 * (`{"count":5}` answered with one id). No body, or an empty one (fetch's bodiless POST), goes on.
 */
const jsonBodiesOnly: express.RequestHandler = (req, _res, next) => {
  const length = req.headers['content-length'];
  const body = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (body && !req.is('application/json'))
    throw new UnsupportedMediaTypeError(
      `the body is sent as ${req.headers['content-type'] ?? 'no Content-Type'}; send JSON with Content-Type: application/json (or no body at all)`,
    );
  next();
};

/** The routes an app serves: `all` (one port), or with IDPOOL_ADMIN_PORT `public` (no `/admin/*`) and `admin`. */
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
  // idpool's own routes read JSON; Leaf's and Tinyid's keep their own conventions (Tinyid's forms).
  app.use(['/apps', '/admin'], jsonBodiesOnly);
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
