import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Instance, startInstance } from '../support/processes';

/**
 * Issue 48 item 4: `/docs` is the API reference rendered from
 * `/openapi.json` by Swagger UI (the pinned `swagger-ui-dist`), every
 * script and style served by idpool itself: the page works with no
 * network beyond the instance (no CDN, no validator).
 */
describe('/docs: the API page, offline', () => {
  let dir: string;
  let instance: Instance;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idpool-api-docs-'));
    instance = await startInstance({ IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}` });
  });
  afterAll(async () => {
    await instance?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers HTML whose scripts and styles all come from this instance, and which reads /openapi.json', async () => {
    const page = await fetch(`${instance.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    const html = await page.text();
    const assets = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets).toEqual(['docs/swagger-ui.css', 'docs/swagger-ui-bundle.js', 'docs/init.js']);
    const origin = new URL(instance.url).origin;
    const dist = dirname(require.resolve('swagger-ui-dist/package.json'));
    for (const asset of assets) {
      const url = new URL(asset, page.url);
      expect(url.origin, asset).toBe(origin);
      const res = await fetch(url);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type'), asset).toMatch(
        asset.endsWith('.css') ? /^text\/css/ : /^text\/javascript/,
      );
      const body = await res.text();
      if (asset !== 'docs/init.js')
        expect(body, asset).toBe(readFileSync(join(dist, asset.slice('docs/'.length)), 'utf8'));
      else {
        // The document it renders is this instance's own, and nothing is sent to Swagger's online validator.
        expect(new URL(/url: '([^']+)'/.exec(body)?.[1] ?? '', page.url).href).toBe(`${origin}/openapi.json`);
        expect(body).toContain('validatorUrl: null');
      }
    }
    expect((await fetch(`${origin}/openapi.json`)).status).toBe(200);
    // Nothing else of the package is served, and /docs/ leads back to the page its addresses are relative to.
    expect((await fetch(`${origin}/docs/index.html`)).status).toBe(404);
    const slash = await fetch(`${origin}/docs/`, { redirect: 'manual' });
    expect(slash.status).toBe(301);
    expect(new URL(slash.headers.get('location') ?? '', `${origin}/docs/`).href).toBe(`${origin}/docs`);
  });
});
