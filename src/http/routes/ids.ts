import type { IncomingHttpHeaders } from 'node:http';
import type { IRouter, Request, RequestHandler, Response } from 'express';
import type { Answer } from '../openapi/schemas';
import type { EntityConfig } from '../../entities/entity';
import { InvalidRequestError } from '../../errors';
import { NotAnIdError } from '../../snowflake/explain';
import type { HttpDeps } from '../deps';
import type { Guards } from '../guards';
import { answerOnce } from '../idempotency';
import type { TakenIds } from '../../pool/taken-ids';
import { integerField } from '../params';
import { BODY_LIMIT_BYTES } from '../settings';
import { as400 } from '../validate';
import { NumberScheme } from '../../numbers/scheme';
import { takeKind } from '../../take/take-service';
import { gaplessTake } from './gapless';

export type IdRouteDeps = Pick<HttpDeps, 'takes' | 'snowflake' | 'idempotency'>;

const TAKE_PATH = '/apps/:key/ids';

/** `POST /apps/:key/ids`'s whole answer, served by the router and by {@link takeFastPath}: ids of the entity the secret opens. */
export function takeHandler(deps: IdRouteDeps, guards: Pick<Guards, 'authenticatedEntity'>) {
  return async (req: Request, res: Response): Promise<void> => {
    const entity = await guards.authenticatedEntity(req);
    // A gapless series' ledger is its own idempotency record, and its body may carry a reference.
    const { ids, replayed } =
      takeKind(entity) === 'gapless' ? await gaplessTake(deps.takes, req, entity) : await onceTake(deps, req, entity);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    sendIds(res, ids);
  };
}

/** The take of every other kind: `count` from the body or query (default 1), once per Idempotency-Key. */
function onceTake(deps: IdRouteDeps, req: Request, entity: EntityConfig) {
  // Silently dropped, a caller's invoice id would be missing from a ledger it believes it wrote.
  if (typeof req.body === 'object' && req.body !== null && 'reference' in req.body)
    throw new InvalidRequestError(
      `reference is kept only in a gapless series' ledger; entity "${entity.key}" is not gapless and keeps none`,
    );
  const max = entity.maxSizePerTimes;
  const count = integerField(req, 'count', `1 to ${max}`) ?? 1;
  if (count < 1 || count > max) throw new InvalidRequestError(`count must be an integer from 1 to ${max}`);
  return answerOnce(deps.idempotency, req, entity.key, count, () => deps.takes.take(entity, count));
}

/** Take ids and explain one, behind the entity's secret; on the app, so an unrouted method (OPTIONS too) gets its 404. */
export function registerIdRoutes(app: IRouter, deps: IdRouteDeps, guards: Pick<Guards, 'authenticatedEntity'>): void {
  app.post(TAKE_PATH, takeHandler(deps, guards));

  app.get('/apps/:key/ids/:id', async (req, res) => {
    const entity = await guards.authenticatedEntity(req);
    if (entity.numbers) {
      // A number not of the entity's template (or naming no period of its zone) is the client's mistake.
      const scheme = NumberScheme.of(entity.numbers);
      const decoded = scheme.decode(req.params.id);
      if (!decoded)
        throw new InvalidRequestError(
          `"${req.params.id}" is not a number of ${entity.key}'s template ${entity.numbers.format} (or names no ${scheme.template.reset} period of ${entity.numbers.timeZone})`,
        );
      res.json(decoded satisfies Answer<'DecodedNumber'>);
      return;
    }
    if (entity.mode !== 'snowflake')
      throw new InvalidRequestError(`entity "${entity.key}" does not issue snowflake ids; only those can be decoded`);
    // An id that cannot be one of this layout's is the client's mistake.
    res.json(await as400(NotAnIdError, () => deps.snowflake.decode(req.params.id)));
  });
}

/**
 * `{"ids":[…]}` without `res.json` or JSON.stringify: ids are decimal strings idpool made (no escaping), which
 * TakenIds writes in one pass, and ASCII goes out as latin1 (a copy, not a UTF-8 encode; a Buffer as it is; Node sets
 * Content-Length for a single `end`). Measured here (1,000 snowflake ids): 81 µs by JSON.stringify and UTF-8, 55 µs so.
 */
function sendIds(res: Response, ids: TakenIds): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(ids.body(), 'latin1');
}

/** `{"ids":[…]}` as the route writes it (exported for its test). */
export function idsJson(ids: TakenIds): string {
  const body = ids.body();
  return typeof body === 'string' ? body : body.toString('latin1');
}

/** `req.route` of a request the fast path serves: the request log reads its path. */
const FAST_ROUTE = Object.freeze({ path: TAKE_PATH });
/** `/apps/<key>/ids` exactly, with an optional query; other spellings (case, trailing slash, escapes) take the router. */
const FAST_URL = /^\/apps\/([A-Za-z0-9_.-]{1,64})\/ids(?:\?|$)/;
/** The content types express.json parses here without question (utf-8 JSON). */
const FAST_JSON = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * `POST /apps/<key>/ids` in its common form (the route's own spelling, no body or plain utf-8 JSON up to
 * {@link BODY_LIMIT_BYTES}) served ahead of express's body parser and router, with the `req.params`, `req.body` and
 * `req.route` they would have set, by the route's own handler; anything else goes through express. Measured here:
 * those cost ~12 µs of the ~30 µs a bare express 5 route spends (`node:http` ~15 µs); `npm run bench -- http`.
 */
export function takeFastPath(take: ReturnType<typeof takeHandler>): RequestHandler {
  return (req, res, next) => {
    const url = req.method === 'POST' ? FAST_URL.exec(req.url) : null;
    const form = url ? fastBody(req.headers) : undefined;
    if (!url || !form) {
      next();
      return;
    }
    const { length, json } = form;
    req.params = { key: url[1] };
    req.route = FAST_ROUTE;
    const answer = (body: unknown) => {
      req.body = body;
      take(req, res).catch(next);
    };
    // express.json answers an empty JSON body with {}, and leaves a request without one undefined.
    if (length === 0) {
      answer(json && req.headers['content-length'] !== undefined ? {} : undefined);
      return;
    }
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.once('end', () => {
      // answer only starts the async take: a throw here is JSON.parse's.
      try {
        // express.json's decoder drops a byte order mark; so does this.
        answer(JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
      } catch {
        next(new InvalidRequestError('request body is not valid JSON'));
      }
    });
  };
}

/** The body's length and whether it is JSON; undefined for one left to express (encoded, chunked, too large, not JSON). */
function fastBody(headers: IncomingHttpHeaders): { length: number; json: boolean } | undefined {
  const encoding = headers['content-encoding'];
  if ((encoding !== undefined && encoding.toLowerCase() !== 'identity') || headers['transfer-encoding'] !== undefined)
    return undefined;
  const length = headers['content-length'] === undefined ? 0 : Number(headers['content-length']);
  const json = headers['content-type'] !== undefined && FAST_JSON.test(headers['content-type']);
  return length >= 0 && length <= BODY_LIMIT_BYTES && (length === 0 || json) ? { length, json } : undefined;
}
