import express, { type IRouter, type Router } from 'express';
import {
  type EntityConfig,
  KEY_PATTERN,
  addSecretSchema,
  describeEntity,
  holdSchema,
  raisePeriodSchema,
  raiseSchema,
  registerSchema,
  rotateSchema,
  updateSchema,
} from '../../entities/entity';
import { ConflictError, InvalidRequestError } from '../../errors';
import { dashboardRouter } from '../dashboard/router';
import type { HttpDeps } from '../deps';
import type { Guards } from '../guards';
import { OPS_DEFAULT_ROWS, PAGE_DEFAULT, entityKeyParam, limitParam, queryParam } from '../params';
import { as400, parseBody } from '../validate';
import { type Answer, opsSearch, secretId } from '../openapi/schemas';
import { type NumberPeriodJson, numberPeriodJson, numberView } from '../../ops/period-forecast';
import { timeZone } from '../../numbers/zone';
import { numberPoolCap } from '../../numbers/scheme';

const OPS_SEARCH = 'q must be part of an entity key: up to 64 of A-Z a-z 0-9 _ - .';

type ViewDeps = Pick<HttpDeps, 'lines' | 'numbers'>;
export type AdminRouteDeps = ViewDeps & Pick<HttpDeps, 'registry' | 'operations'>;

/** Everything under `/admin`: the dashboard page, then the admin API, every route of which is behind the admin token. */
export function registerAdminRoutes(app: IRouter, deps: AdminRouteDeps, guards: Pick<Guards, 'requireAdmin'>): void {
  // Before the token check: the dashboard page holds no data (dashboard/router.ts).
  app.use('/admin/ui', dashboardRouter());
  const router = express.Router();
  router.use(guards.requireAdmin);
  entityRoutes(router, deps);
  lineRoutes(router, deps);
  cutoverRoutes(router, deps);
  operationRoutes(router, deps);
  app.use('/admin', router);
}

/** Register, list, show, change and retire entities, and their secrets. */
function entityRoutes(router: Router, deps: AdminRouteDeps): void {
  router.post('/apps', async (req, res) => {
    const input = parseBody(registerSchema, req.body);
    const { entity: created, secret } = await deps.registry.register(input);
    // Described as inserted: no SQL query or Redis round trip on the registration path.
    const [view] = await withPools(deps, [created], 'just registered');
    res.status(201).json({ ...view, secret });
  });

  router.get('/apps', async (req, res) => {
    const limit = limitParam(req, PAGE_DEFAULT);
    const after = queryParam(
      req,
      'after',
      KEY_PATTERN,
      'after must be an entity key (1-64 of A-Z a-z 0-9 _ - .), the "next" of the previous page',
    );
    const page = deps.registry.page(after, limit);
    res.json({ apps: await withPools(deps, page.entities), next: page.next });
  });

  router.get('/apps/:key', async (req, res) => {
    res.json(await withPool(deps, await deps.registry.require(entityKeyParam(req))));
  });

  router.patch('/apps/:key', async (req, res) => {
    const key = entityKeyParam(req);
    const patch = parseBody(updateSchema, req.body);
    res.json(await withPool(deps, await deps.registry.update(key, patch)));
  });

  router.delete('/apps/:key', async (req, res) => {
    await deps.registry.retire(entityKeyParam(req));
    res.status(204).end();
  });

  router.post('/apps/:key/secret', async (req, res) => {
    const key = entityKeyParam(req);
    const { keepOldForSeconds } = parseBody(rotateSchema, req.body ?? {});
    res.json({ secret: await deps.registry.rotateSecret(key, keepOldForSeconds) } satisfies Answer<'Secret'>);
  });

  router.post('/apps/:key/secrets', async (req, res) => {
    const key = entityKeyParam(req);
    const input = parseBody(addSecretSchema, req.body ?? {});
    const added = await deps.registry.addSecret(key, input);
    const expiresAt = added.expiresAt === null ? null : new Date(added.expiresAt).toISOString();
    // A given secret is never echoed (the caller has it); a made one is shown this once.
    res.status(added.added ? 201 : 200).json({
      id: added.id,
      added: added.added,
      ...(input.secret === undefined ? { secret: added.secret } : {}),
      expiresAt,
    });
  });

  router.delete('/apps/:key/secrets/:secretId', async (req, res) => {
    const key = entityKeyParam(req);
    const id = secretId.safeParse(req.params.secretId);
    if (!id.success)
      throw new InvalidRequestError('secretId must be 1-32 of A-Z a-z 0-9 (the id the entity view lists)');
    await deps.registry.removeSecret(key, id.data);
    res.status(204).end();
  });
}

/** The number line of an entity: raise it, hold it and release it. */
function lineRoutes(router: Router, deps: AdminRouteDeps): void {
  router.post('/apps/:key/raise', async (req, res) => {
    const key = entityKeyParam(req);
    const entity = await deps.registry.require(key);
    if (entity.gapless)
      throw new ConflictError(
        `"${key}" is a gapless series: its counter moves only with its ledger (a restore is reconciled with POST /admin/apps/${key}/numbers/reconcile)`,
      );
    if (entity.numbers) {
      const { period, seq } = parseBody(raisePeriodSchema, req.body ?? {});
      // A period the entity's calendar lacks is the caller's mistake.
      const after = await as400(RangeError, () => deps.numbers.raise(entity, period, seq), 'period: ');
      res.json({ key, period, seq: after.toString() } satisfies Answer<'RaisedPeriod'>);
      return;
    }
    const { firstId } = parseBody(raiseSchema, req.body ?? {});
    if (entity.mode === 'snowflake')
      throw new InvalidRequestError(`entity "${key}" has no number line to raise (snowflake ids come from time)`);
    const number = deps.registry.firstNumberFrom(entity, firstId);
    // The line is the pool's head, or the first unreserved number: a firstId at or below it would only discard the pool.
    const head = await deps.lines.pools.next(key);
    const line = head ?? (await deps.lines.offsets.peekMany([key])).get(key) ?? entity.startOffset;
    const lineNumber = head === undefined ? line : deps.registry.firstNumberFrom(entity, head);
    if (number <= lineNumber)
      throw new ConflictError(
        `the line of "${key}" is already past firstId ${firstId} (${head === undefined ? `its next unreserved number is ${line}` : `the next id is ${head}`}); nothing changed`,
      );
    res.json(await raised(deps, key, number));
  });

  // The caller (`idpool apps release`) has read the incumbent's row once more and raised the line above it.
  router.post('/apps/:key/release', async (req, res) => {
    res.json(await withPool(deps, await deps.registry.setHeld(entityKeyParam(req), null)));
  });

  // An import whose row moved holds the entity; its pool goes (a direct consumer could pop it otherwise).
  router.post('/apps/:key/hold', async (req, res) => {
    const key = entityKeyParam(req);
    const { reason } = parseBody(holdSchema, req.body ?? {});
    const held = await deps.registry.setHeld(key, reason);
    if (held.mode !== 'snowflake') await deps.lines.pools.discard(key);
    res.json(await withPool(deps, held));
  });
}

/** A live cutover (docs/migrating.md): the entities still reserving from an incumbent's rows, and their finish. */
function cutoverRoutes(router: Router, deps: AdminRouteDeps): void {
  router.get('/live', async (_req, res) => {
    const lines = await deps.lines.offsets.liveLines();
    const entities = new Map(deps.registry.list().map((e) => [e.key, e]));
    const apps = lines.flatMap((line) => {
      const entity = entities.get(line.key);
      if (!entity?.incumbent) return [];
      return [
        {
          key: line.key,
          incumbent: entity.incumbent,
          delta: entity.delta,
          remainder: entity.remainder,
          currentOffset: line.current.toString(),
          reservedFromIncumbent: line.reserved.toString(),
        },
      ];
    });
    res.json({ apps } satisfies Answer<'LiveCutovers'>);
  });

  // `idpool apps import-from … --finish`, once the incumbent's rows stopped moving: firstId is above the row's final value.
  router.post('/apps/:key/finish', async (req, res) => {
    const key = entityKeyParam(req);
    const { firstId } = parseBody(raiseSchema, req.body ?? {});
    const entity = await deps.registry.require(key);
    const line = deps.registry.firstNumberFrom(entity, firstId);
    if (!entity.incumbent?.live || !(await deps.lines.offsets.finishLive(key, line)))
      throw new ConflictError(`entity "${key}" is not in a live cutover`);
    // Its pool goes too, fenced at the new line: it may hold ids reserved from the row below ones the incumbent issued later.
    res.json(await raised(deps, key, line));
  });
}

/** Worker leases, the dashboard's overview of pools, forecasts and alarms, and the fleet's instances. */
function operationRoutes(router: Router, deps: AdminRouteDeps): void {
  router.get('/workers', async (_req, res) => {
    res.json({ workers: await deps.operations.workers() });
  });

  router.get('/ops', async (req, res) => {
    const limit = limitParam(req, OPS_DEFAULT_ROWS);
    const q = queryParam(req, 'q', { test: (s) => opsSearch.safeParse(s).success }, OPS_SEARCH);
    res.json(await deps.operations.overview({ limit, search: q || undefined }));
  });

  // Never a 5xx for Redis: the fleet read falls back to this instance, saying so (fleet/fleet.ts).
  router.get('/instances', async (_req, res) => {
    res.json(await deps.operations.instances());
  });
}

async function withPool(deps: ViewDeps, entity: EntityConfig): Promise<Record<string, unknown>> {
  return (await withPools(deps, [entity]))[0];
}

/** Moves the line up to `line`: the entity after, here at once (other instances see it with their next refresh). */
async function raised(deps: AdminRouteDeps, key: string, line: bigint) {
  await deps.lines.raise(key, line);
  await deps.registry.refresh();
  return withPool(deps, await deps.registry.require(key));
}

/** Config, `currentOffset` and pool of each entity: one SQL query and one Redis round trip for all of them. */
async function withPools(deps: ViewDeps, entities: readonly EntityConfig[], fresh?: 'just registered') {
  const pooled = entities.filter((e) => e.mode !== 'snowflake');
  // A key is never registered twice, so a just-registered entity has reserved nothing and pooled nothing yet.
  const [offsets, sizes] = fresh
    ? [new Map(entities.map((e) => [e.key, e.startOffset])), pooled.map(() => 0)]
    : await Promise.all([
        deps.lines.offsets.peekMany(entities.map((e) => e.key)),
        deps.lines.pools.sizes(pooled.map((e) => e.key)),
      ]);
  // The page answers whole or not at all: one unreadable pool is a dependency fault (503).
  const unread = sizes.find((size) => size instanceof Error);
  if (unread) throw unread;
  const sizeOf = new Map(pooled.map((e, i) => [e.key, sizes[i]]));
  const periods = fresh ? new Map<string, NumberPeriodJson>() : await numberPeriods(deps, entities);
  return entities.map((entity) => {
    const view: Record<string, unknown> = { ...describeEntity(entity) };
    const period = periods.get(entity.key);
    if (entity.mode !== 'snowflake') {
      // A business-number entity's pool is its period's ready numbers (capped); it draws from the period, not the line.
      const { numbers } = entity;
      const { target, lowWatermark, max } = deps.lines.demand.sizing(entity, numbers && numberPoolCap(entity, numbers));
      if (!numbers) view.currentOffset = (offsets.get(entity.key) ?? entity.startOffset).toString();
      view.pool = { size: (numbers ? period?.ready : sizeOf.get(entity.key)) ?? 0, target, max, lowWatermark };
    }
    if (period) view.period = period;
    return view;
  });
}

/** Now's period of each business-number entity, read now (not a sample behind), at the sampler's last rate (or 0). */
async function numberPeriods(deps: ViewDeps, entities: readonly EntityConfig[]) {
  const { numbers } = deps;
  const periods = entities
    // A gapless series' usage is its ledger's counter (ops/number-usage.ts).
    .filter((e) => e.numbers)
    .map(async (entity) => {
      const usage = await numbers.usage(entity);
      const rate = numbers.view(entity.key)?.forecast.takePerSecond ?? 0;
      const zone = timeZone(usage.timeZone);
      return [entity.key, numberPeriodJson(numberView(usage, rate, (ms) => zone.wallClock(ms)))] as const;
    });
  return new Map(await Promise.all(periods));
}
