/**
 * A gapless series' routes (docs/numbers.md "Gapless series"): its take's
 * body on the native take route, void, the ledger's pages, the audit (JSON
 * or CSV) behind the entity's secret, and the admin's reconcile after a
 * restore.
 */
import type { IRouter, Request, Response } from 'express';
import { z } from 'zod';
import type { EntityConfig } from '../../entities/entity';
import { ConflictError, InvalidRequestError } from '../../errors';
import { type LedgerRowJson, ledgerCsv } from '../../gapless/csv';
import type { LedgerEntry } from '../../gapless/ledger';
import type { GaplessSeries } from '../../gapless/series';
import type { HttpDeps } from '../deps';
import type { Guards } from '../guards';
import { idempotencyKeyOf } from '../idempotency';
import { entityKeyParam, limitParam, queryParam } from '../params';
import { parseBody } from '../validate';

/** What the gapless routes use: the series, and the registry for the admin's reconcile. */
type GaplessRouteDeps = Pick<HttpDeps, 'numbers' | 'registry'>;

const takeBody = z.strictObject({
  count: z.number({ error: 'must be an integer' }).int('must be an integer').optional(),
  reference: z.string({ error: 'must be a string of 1-128 characters' }).optional(),
});
const voidBody = z.strictObject({ reason: z.string({ error: 'must say why, 1-255 characters' }) });
const periodBody = z.strictObject({ period: z.string({ error: 'must name a period, e.g. 20261128' }).optional() });

/**
 * A gapless take on `POST /apps/:key/ids`: `count` and an optional
 * `reference` from the JSON body (or `?count=`), the Idempotency-Key from
 * its header. The ledger is the idempotency record, so the idempotency
 * store is not asked.
 */
export async function gaplessTake(takes: HttpDeps['takes'], req: Request, entity: EntityConfig) {
  const body = parseBody(takeBody, req.body ?? {});
  const range = `count must be an integer from 1 to ${entity.maxSizePerTimes}`;
  const count = body.count ?? Number(queryParam(req, 'count', /^\d{1,4}$/, range) ?? 1);
  if (count < 1 || count > entity.maxSizePerTimes) throw new InvalidRequestError(range);
  const ids = await takes.take(entity, count, { idempotencyKey: idempotencyKeyOf(req), reference: body.reference });
  return { ids, replayed: ids.replayed === true };
}

/** Void, the ledger and the audit, each behind the entity's secret. */
export function registerGaplessRoutes(
  app: IRouter,
  deps: GaplessRouteDeps,
  guards: Pick<Guards, 'authenticatedEntity'>,
): void {
  const series = async (req: Request) => {
    const entity = await guards.authenticatedEntity(req);
    return { entity, gapless: seriesOf(deps, entity) };
  };

  app.post('/apps/:key/numbers/:number/void', async (req, res) => {
    const { entity, gapless } = await series(req);
    const { reason } = parseBody(voidBody, req.body ?? {});
    res.json(entryJson(await gapless.void(entity, req.params.number, reason)));
  });

  app.get('/apps/:key/numbers/audit', async (req, res) => {
    const { entity, gapless } = await series(req);
    if (wantsCsv(req)) return sendCsv(res, gapless, entity, periodParam(req));
    res.json({ key: entity.key, ...(await gapless.audit(entity, periodParam(req))) });
  });

  app.get('/apps/:key/numbers', async (req, res) => {
    const { entity, gapless } = await series(req);
    if (wantsCsv(req)) return sendCsv(res, gapless, entity, periodParam(req));
    const page = await gapless.page(entity, periodParam(req), afterParam(req), limitParam(req, 100));
    res.json({ key: entity.key, period: page.period, numbers: page.entries.map(entryJson), next: page.next });
  });
}

/** The reconcile after a restore, behind the admin token (on the admin port when there is one). */
export function registerGaplessAdminRoutes(
  app: IRouter,
  deps: GaplessRouteDeps,
  guards: Pick<Guards, 'requireAdmin'>,
): void {
  app.post('/admin/apps/:key/numbers/reconcile', guards.requireAdmin, async (req, res) => {
    const key = entityKeyParam(req);
    const { period } = parseBody(periodBody, req.body ?? {});
    const entity = await deps.registry.require(key);
    res.json({ key, ...(await seriesOf(deps, entity).reconcile(entity, period)) });
  });
}

function seriesOf(deps: GaplessRouteDeps, entity: EntityConfig): HttpDeps['numbers']['gapless'] {
  if (!entity.gapless) throw new ConflictError(`entity "${entity.key}" is not a gapless series: it keeps no ledger`);
  return deps.numbers.gapless;
}

/** The row with `issuedAt` in ISO 8601, its fields in the ledger's order. */
const entryJson = (e: LedgerEntry): LedgerRowJson => ({ ...e, issuedAt: new Date(e.issuedAt).toISOString() });

const periodParam = (req: Request) =>
  queryParam(
    req,
    'period',
    /^(\d{4,10}|all)$/,
    'period must name a period, e.g. 20261128 for a daily entity (all for reset never)',
  );

const afterParam = (req: Request) =>
  BigInt(queryParam(req, 'after', /^\d{1,19}$/, 'after must be a sequence, the "next" of the previous page') ?? 0);

function wantsCsv(req: Request): boolean {
  if (req.query.format === 'csv') return true;
  if (req.query.format !== undefined && req.query.format !== 'json')
    throw new InvalidRequestError('format must be json or csv');
  return req.query.format === undefined && /\btext\/csv\b/i.test(req.get('accept') ?? '');
}

/** The period's whole ledger as CSV, read and written a page at a time. */
async function sendCsv(
  res: Response,
  gapless: Pick<GaplessSeries, 'page'>,
  entity: EntityConfig,
  periodId: string | undefined,
): Promise<void> {
  let page = await gapless.page(entity, periodId, 0n, 1000);
  res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="${entity.key}-${page.period}.csv"`);
  res.write(ledgerCsv(page.entries.map(entryJson), true));
  while (page.next !== null) {
    page = await gapless.page(entity, page.period, BigInt(page.next), 1000);
    res.write(ledgerCsv(page.entries.map(entryJson), false));
  }
  res.end();
}
