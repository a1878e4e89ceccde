import type { IRouter } from 'express';
import type { Answer } from '../openapi/schemas';
import type { HttpDeps, ReadinessReport } from '../deps';
import type { Guards } from '../guards';
import { apiDocsRouter } from '../api-docs';
import { openApiDocument } from '../openapi';
import { queryParam } from '../params';
import { degradeShared, publicCheck, sharedCheck } from '../readiness';

export type OpsRouteDeps = Pick<HttpDeps, 'operations' | 'tokens' | 'draining' | 'clock'>;

/** `/readyz` answers from a check at most this old (ms): probes every few seconds still see a fresh one. */
const READINESS_TTL_MS = 1000;

/** What probes, scrapers and API tools read: `/healthz`, `/readyz`, `/metrics`, `/openapi.json` and its page `/docs` (on the app itself, as the id routes). */
export function registerOpsRoutes(app: IRouter, deps: OpsRouteDeps, guards: Pick<Guards, 'requireToken'>): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' } satisfies Answer<'Health'>);
  });

  const { operations } = deps;
  const readiness = sharedCheck(() => operations.readiness(), deps.clock, READINESS_TTL_MS);
  app.get('/readyz', async (req, res) => {
    // `degrade`, or unset: shared dependencies then fail readiness; anything else is a 400.
    const degrade = queryParam(req, 'shared', /^degrade$/, 'shared: must be degrade (or left out)') !== undefined;
    // Shutting down is reported at once, so load balancers stop sending here first.
    const checked = await (deps.draining() ? operations.readiness() : readiness());
    const report = degrade ? degradeShared(checked) : checked;
    if (!report.ready) res.setHeader('Retry-After', '1');
    res.status(report.ready ? 200 : 503).json(readinessBody(report));
  });

  app.get('/metrics', async (req, res) => {
    if (deps.tokens.metrics !== undefined) await guards.requireToken(req, ['metrics', 'ops'], 'invalid metrics token');
    const { contentType, body } = await operations.metrics();
    res.setHeader('Content-Type', contentType);
    res.send(body);
  });

  const openapi = openApiDocument();
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  app.use('/docs', apiDocsRouter());
}

/** The `/readyz` answer: each check as `publicCheck` shows it, and why when not ready. */
function readinessBody(report: ReadinessReport): Record<string, unknown> {
  const checks = Object.fromEntries(Object.entries(report.checks).map(([k, v]) => [k, publicCheck(v)]));
  const failed = Object.entries(checks).filter(([k, v]) => v !== 'ok' && !report.degraded?.includes(k));
  const reason = report.reason ?? (failed.length ? failed.map(([k, v]) => `${k}: ${v}`).join('; ') : undefined);
  return {
    status: report.ready ? 'ready' : 'not_ready',
    ...(report.ready ? {} : { reason }),
    ...(report.degraded ? { degraded: report.degraded } : {}),
    checks,
    ...(report.sampling ? { sampling: report.sampling } : {}),
  };
}
