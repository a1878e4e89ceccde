import type { IRouter, Request } from 'express';
import type { EntityConfig } from '../../entities/entity';
import { InvalidRequestError, NotFoundError } from '../../errors';
import { type IdExplanation, NotAnIdError } from '../../snowflake/explain';
import type { HttpDeps, SnowflakeIssuer } from '../deps';
import type { Guards } from '../guards';
import { answerOnce } from '../idempotency';

/** What the id routes use of the app's dependencies. */
export type IdRouteDeps = Pick<HttpDeps, 'dispatcher' | 'snowflake' | 'snowflakeRate' | 'idempotency'>;

/**
 * The client API: take ids (`POST /apps/:key/ids`) and explain a
 * snowflake id, each behind the entity's secret. Registered on the app
 * itself, not a sub-router, so an unrouted method (OPTIONS included) still
 * reaches the app's 404.
 */
export function registerIdRoutes(app: IRouter, deps: IdRouteDeps, guards: Pick<Guards, 'authenticatedEntity'>): void {
  app.post('/apps/:key/ids', async (req, res) => {
    const entity = await guards.authenticatedEntity(req);
    const count = requestedCount(req, entity.maxSizePerTimes);
    const { ids, replayed } = await answerOnce(deps.idempotency, req, entity.key, count, () => takeIds(deps, entity, count));
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.json({ ids });
  });

  app.get('/apps/:key/ids/:id', async (req, res) => {
    const entity = await guards.authenticatedEntity(req);
    if (entity.mode !== 'snowflake' || !deps.snowflake) throw new InvalidRequestError(`entity "${entity.key}" does not issue snowflake ids; only those can be decoded`);
    res.json(decodeOr400(deps.snowflake, req.params.id as string));
  });
}

/** `count` ids of the entity: from its pool, or made by the snowflake generator within its per-second limit. */
async function takeIds(deps: IdRouteDeps, entity: EntityConfig, count: number): Promise<string[]> {
  if (entity.mode !== 'snowflake') return deps.dispatcher.take(entity, count);
  if (!deps.snowflake) throw new NotFoundError('snowflake ids are not enabled on this instance');
  await deps.snowflakeRate?.admit(entity.key, count, entity.maxSizePerSecond);
  return deps.snowflake.take(entity.key, count);
}

/** `count` from the JSON body or `?count=`; default 1; an integer in 1..max. */
function requestedCount(req: Request, max: number): number {
  const body: unknown = req.body;
  let count: unknown = 1;
  if (body !== undefined && body !== null && !(typeof body === 'object' && !Array.isArray(body))) {
    throw new InvalidRequestError('request body must be a JSON object like {"count": 10}');
  }
  const fields = body ? Object.keys(body) : [];
  const unknownField = fields.find((f) => f !== 'count');
  if (unknownField) throw new InvalidRequestError(`unknown field "${unknownField}"; only "count" is accepted`);
  if (body && 'count' in body) count = (body as { count: unknown }).count;
  else if (req.query.count !== undefined) {
    const raw = req.query.count;
    if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw)) throw new InvalidRequestError(`count must be an integer from 1 to ${max}`);
    count = Number(raw);
  }
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > max) {
    throw new InvalidRequestError(`count must be an integer from 1 to ${max}`);
  }
  return count;
}

/** An id that cannot be one of this layout's is the client's mistake: 400 with the reason. */
function decodeOr400(snowflake: SnowflakeIssuer, id: string): IdExplanation {
  try {
    return snowflake.decode(id);
  } catch (err) {
    if (err instanceof NotAnIdError) throw new InvalidRequestError(err.message);
    throw err;
  }
}
