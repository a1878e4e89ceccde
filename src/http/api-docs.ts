import { dirname, join } from 'node:path';
import express, { type Router } from 'express';
import { NotFoundError } from '../errors';

/** The files of `swagger-ui-dist` (pinned) this page uses, served by idpool itself: it works offline, with no CDN. */
const SWAGGER_FILES = new Map([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
]);

// Relative addresses: /docs/… and /openapi.json behind whatever path a proxy mounts idpool at.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>idpool API</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const INIT = `window.ui = SwaggerUIBundle({
  url: 'openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
});
`;

// Only this origin; Swagger UI sets inline styles and shows data: images.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The headers of a page of ours (the API's, the dashboard's): the sources `csp` allows, and no referrer sent on. */
export function pageSecurity(res: express.Response, csp: string): void {
  res.setHeader('Content-Security-Policy', csp);
  res.setHeader('Referrer-Policy', 'no-referrer');
}

/** `/docs`: the API reference, Swagger UI over `/openapi.json`, public as that document is. */
export function apiDocsRouter(): Router {
  const dist = dirname(require.resolve('swagger-ui-dist/package.json'));
  const router = express.Router({ strict: false });
  router.get('/', (req, res) => {
    // The page's relative addresses need `/docs`, not `/docs/`.
    if (req.originalUrl.split('?')[0].endsWith('/')) {
      res.redirect(301, '../docs');
      return;
    }
    pageSecurity(res, CSP);
    res.type('html').send(PAGE);
  });
  router.get('/:asset', (req, res) => {
    const asset = req.params.asset;
    pageSecurity(res, CSP);
    if (asset === 'init.js') {
      res.type('text/javascript; charset=utf-8').send(INIT);
      return;
    }
    const type = SWAGGER_FILES.get(asset);
    if (!type) throw new NotFoundError(`no API docs asset ${asset}`);
    res.setHeader('Content-Type', type);
    res.sendFile(join(dist, asset));
  });
  return router;
}
