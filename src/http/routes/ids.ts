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

/** What the id routes use of the app's dependencies. */
export type IdRouteDeps = Pick<HttpDeps, 'takes' | 'snowflake' | 'idempotency'>;

/** The take route's path, as express and the request log name it. */
const TAKE_PATH = '/apps/:key/ids';

/** The take route's handler: `POST /apps/:key/ids`, served by the router and by {@link takeFastPath}. */
export type TakeHandler = (req: Request, res: Response) => Promise<void>;

/** Takes `count` ids for the entity the secret opens (the take route's whole answer). */
export function takeHandler(deps: IdRouteDeps, guards: Pick<Guards, 'authenticatedEntity'>): TakeHandler {
  return async (req, res) => {
    const entity = await guards.authenticatedEntity(req);
    // A gapless series' ledger is its own idempotency record, and its body may carry a reference.
    const { ids, replayed } =
      takeKind(entity) === 'gapless' ? await gaplessTake(deps.takes, req, entity) : await onceTake(deps, req, entity);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    sendIds(res, ids);
  };
}

/** The take of every other kind: `count` from the body or query, once per Idempotency-Key through the idempotency store. */
function onceTake(deps: IdRouteDeps, req: Request, entity: EntityConfig) {
  // Silently dropped, a caller's invoice id would be missing from a ledger it believes it wrote.
  if (typeof req.body === 'object' && req.body !== null && 'reference' in req.body)
    throw new InvalidRequestError(
      `reference is kept only in a gapless series' ledger; entity "${entity.key}" is not gapless and keeps none`,
    );
  // `count` from the JSON body or `?count=`; default 1.
  const max = entity.maxSizePerTimes;
  const count = integerField(req, 'count', `1 to ${max}`) ?? 1;
  if (count < 1 || count > max) throw new InvalidRequestError(`count must be an integer from 1 to ${max}`);
  return answerOnce(deps.idempotency, req, entity.key, count, () => deps.takes.take(entity, count));
}

/**
 * The client API: take ids (`POST /apps/:key/ids`, with `take`) and explain a
 * snowflake id, each behind the entity's secret. Registered on the app
 * itself, not a sub-router, so an unrouted method (OPTIONS included) still
 * reaches the app's 404.
 */
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
 * The take route's 200 answer, `{"ids":["…",…]}`, written without
 * `res.json` (content-type parsing, charset rewriting) or JSON.stringify:
 * every id is a decimal string idpool made (a pool's or the generator's),
 * so it needs no escaping, and TakenIds writes the array in a single pass
 * (a join, or a substring of ids a take already holds joined) where
 * JSON.stringify first flattens each id the generator built from two
 * parts. The body is ASCII, so it goes out as latin1: a copy, not a UTF-8
 * encode. Node sets Content-Length itself for a single `end`. Measured
 * here (1,000 snowflake ids): 81 µs by JSON.stringify and UTF-8, 55 µs so.
 */
function sendIds(res: Response, ids: TakenIds): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  // A Buffer body goes out as it is: `end` uses the encoding only for a string.
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
 * `POST /apps/<key>/ids` in its common form, served ahead of express's body
 * parser and router: the body is at most {@link BODY_LIMIT_BYTES} bytes of
 * plain utf-8 JSON (or none), and the path is the route's own spelling.
 * The request is then what express would have handed the route (the same
 * `req.params`, `req.body`, `req.route`) and the route's own handler
 * answers it, so the route behaves the same either way; errors go to the
 * app's error handler. Everything else (other methods and paths, another
 * content type or encoding, a chunked or larger body) goes on through
 * express as before. Measured here: express's body parser and router cost
 * ~12 µs of the ~30 µs a bare express 5 route spends per request
 * (`node:http` ~15 µs); `npm run bench -- http` compares.
 */
export function takeFastPath(take: TakeHandler): RequestHandler {
  return (req, res, next) => {
    const url = req.method === 'POST' ? FAST_URL.exec(req.url) : null;
    const form = url ? fastBody(req.headers) : undefined;
    if (!url || !form) {
      next();
      return;
    }
    const { length, json } = form;
    req.params = { key: url[1] };
    // What the router would have set: the request log names the route by it.
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
      let body: unknown;
      try {
        // express.json's decoder drops a byte order mark; so does this.
        body = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
      } catch {
        next(new InvalidRequestError('request body is not valid JSON'));
        return;
      }
      answer(body);
    });
  };
}

/**
 * The body's length and whether it is JSON, when the fast path reads it
 * itself; undefined for one it leaves to express: encoded, chunked, larger
 * than {@link BODY_LIMIT_BYTES}, or not JSON (express.json leaves a body of
 * another type unread; the router path does the same).
 */
function fastBody(headers: IncomingHttpHeaders): { length: number; json: boolean } | undefined {
  const encoding = headers['content-encoding'];
  if ((encoding !== undefined && encoding.toLowerCase() !== 'identity') || headers['transfer-encoding'] !== undefined)
    return undefined;
  const length = headers['content-length'] === undefined ? 0 : Number(headers['content-length']);
  const json = headers['content-type'] !== undefined && FAST_JSON.test(headers['content-type']);
  return length >= 0 && length <= BODY_LIMIT_BYTES && (length === 0 || json) ? { length, json } : undefined;
}
