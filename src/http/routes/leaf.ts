import express, { type IRouter, type Request, type Response } from 'express';
import type { EntityConfig } from '../../entities/entity';
import type { Clock } from '../../clock';
import { GaplessNotServedError, IdpoolError } from '../../errors';
import { takeKind } from '../../take/take-service';
import type { HttpDeps } from '../deps';
import { type ErrorAnswer, type errorFaces, sendSpringError } from '../errors';

/** What Leaf's routes use: the registry (no credential: a lookup), the native take, the clock of its error bodies. */
export type LeafRouteDeps = Pick<HttpDeps, 'takes' | 'clock'> & { registry: Pick<HttpDeps['registry'], 'findByTag'> };

/** A key Leaf's routes do not serve: the client's mistake to idpool (404, not logged as a failure), a 500 to Leaf. */
class LeafRefusal extends IdpoolError {
  constructor(reason: string) {
    super(404, 'not_found', reason);
  }
}

/**
 * Leaf's two routes (`leaf-server`'s controller), any method, no credential: one id of an entity opted in
 * (`compat: ['leaf']`) by the native take, as a bare decimal `text/plain` body; every failure HTTP 500. An unknown
 * key, one not opted in and one of the other family answer alike: nothing is told of entities not opted in.
 */
export function registerLeafRoutes(app: IRouter, deps: LeafRouteDeps, errors: ReturnType<typeof errorFaces>): void {
  const router = express.Router();
  const route = (family: 'segment' | 'snowflake') => async (req: Request, res: Response) => {
    const entity = await servedEntity(deps, req.params.key as string, family);
    const [id] = (await deps.takes.take(entity, 1)).toArray();
    // As Spring writes a String a controller returns.
    res.status(200).setHeader('Content-Type', 'text/plain;charset=UTF-8');
    res.end(id, 'latin1');
  };
  router.all('/api/segment/get/:key', route('segment'));
  router.all('/api/snowflake/get/:key', route('snowflake'));
  router.use(errors(leafError(deps.clock)));
  app.use(router);
}

/** The entity `key` names on Leaf's routes (its key, or its alias: a Leaf tag that does not fit idpool's keys). */
async function servedEntity(deps: LeafRouteDeps, key: string, family: 'segment' | 'snowflake'): Promise<EntityConfig> {
  const entity = await deps.registry.findByTag(key);
  if (entity?.compat.includes('leaf') && takeKind(entity) === 'gapless')
    throw new GaplessNotServedError(entity.key, "on Leaf's routes (a retry there cannot say it is one)");
  if (!entity || !entity.compat.includes('leaf') || takeKind(entity) !== family)
    throw new LeafRefusal(`no ${family} entity "${key}" is served to Leaf clients`);
  return entity;
}

/** Every failure as Leaf answers it: Spring's 500 with Leaf's `Result`; a wait keeps `Retry-After` for other clients. */
const leafError =
  (clock: Pick<Clock, 'now'>): ErrorAnswer =>
  (req, res, err) => {
    // Leaf's `Result` codes: -2 key not served, -1 no snowflake id made, -3 no segment ready.
    const code =
      err instanceof LeafRefusal || err instanceof GaplessNotServedError
        ? -2n
        : req.path.startsWith('/api/snowflake/')
          ? -1n
          : -3n;
    if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
    sendSpringError(req, res, clock.now(), 500, `Result{id=${code}, status=EXCEPTION}`);
  };
