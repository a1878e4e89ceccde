import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import express, { type Router } from 'express';
import { NotFoundError } from '../../errors';
import { pageSecurity } from '../api-docs';

/** Content types of the assets; a Map, so a name like `constructor` is not found on a prototype. */
const ASSETS = new Map([
  ['dashboard.js', 'text/javascript; charset=utf-8'],
  ['dashboard.css', 'text/css; charset=utf-8'],
]);

// Only this origin's scripts, styles and data, no inline code: an entity name can never become markup or script.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * The dashboard at `/admin/ui`: a page and its script holding no data, so served without a token; the page asks for
 * one and sends it as a bearer header to `GET /admin/ops` (a cookie would expose the admin API to cross-site requests).
 */
export function dashboardRouter(): Router {
  const dir = join(__dirname, 'assets');
  const files = new Map<string, string>();
  for (const name of ['index.html', ...ASSETS.keys()]) files.set(name, readFileSync(join(dir, name), 'utf8'));
  const router = express.Router({ strict: false });
  // The app sets nosniff and no-store on every answer already.
  router.get('/', (_req, res) => {
    pageSecurity(res, CSP);
    res.type('html').send(files.get('index.html'));
  });
  router.get('/:asset', (req, res) => {
    const asset = req.params.asset;
    const type = ASSETS.get(asset);
    if (!type) throw new NotFoundError(`no dashboard asset ${asset}`);
    pageSecurity(res, CSP);
    res.setHeader('Content-Type', type);
    res.send(files.get(asset));
  });
  return router;
}
