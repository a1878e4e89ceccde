import express, { type IRouter, type Request, type Response } from 'express';
import type { Clock } from '../../clock';
import type { EntityConfig } from '../../entities/entity';
import { ConflictError, GaplessNotServedError, InvalidRequestError, UnauthorizedError } from '../../errors';
import { takeKind } from '../../take/take-service';
import type { LeasedSegment } from '../../segment/lease';
import type { HttpDeps } from '../deps';
import { type ErrorAnswer, type errorFaces, sendSpringError } from '../errors';
import type { Guards } from '../guards';
import { BODY_LIMIT_BYTES, TINYID_BATCH_MAX } from '../settings';

/** A `batchSize` Spring cannot bind to an Integer: its 400, not a Tinyid answer. */
class BatchSizeBindError extends InvalidRequestError {
  constructor(readonly input: string) {
    super(`batchSize must be an integer, got "${input.slice(0, 32)}"`);
  }
}

/**
 * Didi Tinyid's id API (`tinyid-server`'s `IdContronller`): `nextId` takes and `nextSegmentId` leases as the native
 * routes do, `bizType` the entity key and `token` one of its secrets. Every answer, failures too, is HTTP 200 in
 * Tinyid's shapes, so its clients run unchanged; only a `batchSize` Spring cannot bind is its 400.
 */
export function registerTinyidRoutes(
  app: IRouter,
  deps: Pick<HttpDeps, 'takes' | 'leases' | 'clock'>,
  guards: Pick<Guards, 'entityBySecret'>,
  errors: ReturnType<typeof errorFaces>,
): void {
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: BODY_LIMIT_BYTES, parameterLimit: 10 });
  const route = (name: string, handler: (req: Request, res: Response) => Promise<void>) => {
    const path = `/tinyid/id/${name}`;
    router.get(path, handler);
    router.post(path, form, handler);
  };
  // Spring reads a missing parameter as null, which Tinyid's token check refuses: the same 401 here.
  const authorised = (req: Request) =>
    guards.entityBySecret(req, parameter(req, 'bizType') ?? '', parameter(req, 'token') ?? '');

  route('nextId', async (req, res) => {
    const batchSize = batchSizeOf(req);
    const entity = await authorised(req);
    const ids = batchSize > 0 ? await takeForTinyid(deps, entity, batchSize) : [];
    sendJson(res, `[${ids.join(',')}]`);
  });

  route('nextIdSimple', async (req, res) => {
    const batchSize = batchSizeOf(req);
    const entity = await authorised(req);
    // Tinyid fails (an empty answer) on a batch of 0 or less: it trims a trailing comma that is not there.
    if (batchSize < 1) throw new InvalidRequestError('batchSize must be at least 1');
    sendText(req, res, (await takeForTinyid(deps, entity, batchSize)).join(','));
  });

  route('nextSegmentId', async (req, res) => {
    const s = tinyidSegment(await deps.leases.lease(await authorised(req)));
    sendJson(
      res,
      `{"maxId":${s.maxId},"loadingId":${s.loadingId},"currentId":${s.currentId},"delta":${s.delta},"remainder":${s.remainder}}`,
    );
  });

  route('nextSegmentIdSimple', async (req, res) => {
    const s = tinyidSegment(await deps.leases.lease(await authorised(req)));
    sendText(req, res, `${s.currentId},${s.loadingId},${s.maxId},${s.delta},${s.remainder}`);
  });

  router.use(errors(tinyidError(deps.clock)));
  app.use(router);
}

/**
 * Every failure as Tinyid answers it, HTTP 200: `vo/ErrorCode` 5 for a refused token, else 6 with the (scrubbed)
 * message, as Tinyid passes its exception's on; the simple routes an empty body.
 */
const tinyidError =
  (clock: Pick<Clock, 'now'>): ErrorAnswer =>
  (req, res, err) => {
    if (err instanceof BatchSizeBindError) {
      sendSpringError(
        req,
        res,
        clock.now(),
        400,
        `Failed to convert value of type 'java.lang.String' to required type 'java.lang.Integer'; nested exception is java.lang.NumberFormatException: For input string: "${err.input}"`,
        'org.springframework.web.method.annotation.MethodArgumentTypeMismatchException',
      );
      return;
    }
    if (req.path.endsWith('Simple')) {
      sendText(req, res, '');
      return;
    }
    const [code, message] = err instanceof UnauthorizedError ? [5, 'token is error'] : [6, err.message];
    sendJson(res, 'null', code, message);
  };

async function takeForTinyid(deps: Pick<HttpDeps, 'takes'>, entity: EntityConfig, count: number): Promise<string[]> {
  if (takeKind(entity) === 'gapless')
    throw new GaplessNotServedError(entity.key, "on Tinyid's routes (a retry there cannot say it is one)");
  // Tinyid's clients parse each id as a Long: refused before any is taken, so none is lost.
  if (takeKind(entity) === 'number')
    throw new ConflictError(
      `business_numbers_not_served: "${entity.key}" hands out business numbers, which Tinyid's Long ids cannot carry; take them with POST /apps/${entity.key}/ids`,
    );
  if (count > entity.maxSizePerTimes)
    throw new InvalidRequestError(
      `batchSize ${count} is above the entity's maxSizePerTimes (${entity.maxSizePerTimes}); raise it to serve Tinyid's batches of up to ${TINYID_BATCH_MAX}`,
    );
  return (await deps.takes.take(entity, count)).toArray();
}

/**
 * Tinyid's view of a segment: `(currentId, maxId]`, the next fetched from `loadingId`, 20 % in (its `LOADING_PERCENT`).
 * `currentId` is just below the first id: Tinyid's client steps up from it to the first value ≡ remainder (mod delta).
 */
function tinyidSegment(segment: LeasedSegment) {
  const currentId = segment.first - 1n;
  return {
    currentId,
    loadingId: currentId + ((segment.last - currentId) * 20n) / 100n,
    maxId: segment.last,
    delta: segment.delta,
    remainder: segment.remainder,
  };
}

/** The first value of `name` from the query, else from a form body (Spring's `getParameter`). */
function parameter(req: Request, name: string): string | undefined {
  const first = (v: unknown): unknown => (Array.isArray(v) ? (v as unknown[])[0] : v);
  // Only a form body holds parameters for Spring; a JSON one (parsed app-wide) does not.
  const form = req.is('application/x-www-form-urlencoded')
    ? (req.body as Record<string, unknown> | undefined)
    : undefined;
  return [first(req.query[name]), first(form?.[name])].find((value) => typeof value === 'string');
}

/**
 * `batchSize` as Spring binds Tinyid's `Integer`: absent or empty is null (Tinyid's 1); whitespace dropped, then
 * `Integer.decode` (sign, `0x`/`#` hex, leading-0 octal); above {@link TINYID_BATCH_MAX} cut to it; 0 or less kept.
 */
function batchSizeOf(req: Request): number {
  const raw = parameter(req, 'batchSize')?.replace(/\s+/g, '');
  if (raw === undefined || raw === '') return 1;
  const m = /^([-+]?)(?:(0[xX]|#)([0-9a-fA-F]+)|(0)([0-7]+)|(\d+))$/.exec(raw);
  if (!m) throw new BatchSizeBindError(raw);
  // Unmatched alternatives are undefined at run time.
  const [, , , hex, , octal, decimal] = m as (string | undefined)[];
  const digits = hex ?? octal ?? decimal ?? '';
  const radix = hex !== undefined ? 16 : octal !== undefined ? 8 : 10;
  const n = (m[1] === '-' ? -1 : 1) * parseInt(digits, radix);
  // Java's Integer: -2^31 .. 2^31 - 1.
  if (!(n >= -(2 ** 31) && n < 2 ** 31)) throw new BatchSizeBindError(raw);
  return Math.min(n, TINYID_BATCH_MAX);
}

/** Tinyid's `Response`: `{"data":…,"code":200,"message":""}`, fields in Jackson's declaration order. */
function sendJson(res: Response, data: string, code = 200, message = ''): void {
  // Spring Boot 1.5's Jackson converter answers with this type whatever the Accept (bar one naming no JSON at all).
  res.status(200).setHeader('Content-Type', 'application/json;charset=UTF-8');
  res.end(`{"data":${data},"code":${code},"message":${JSON.stringify(message)}}`);
}

/** A String answer, typed as Spring's content negotiation types it for the request's Accept header. */
function sendText(req: Request, res: Response, body: string): void {
  res.status(200).setHeader('Content-Type', `${springStringType(req.headers.accept)};charset=UTF-8`);
  res.end(body);
}

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/**
 * The type Spring MVC 4.3 picks for a controller's String: the Accept ranges crossed with what its converters write
 * (text/plain and anything; Jackson application/json), the more specific of each pair, stably sorted by specificity
 * then quality, the first concrete one; `*` / `application/*` → octet stream. So curl and fetch get text/plain, and
 * Tinyid's client (HttpURLConnection: `text/html, image/gif, …`) text/html. Parameters other than q are ignored.
 */
function springStringType(accept: string | undefined): string {
  const producible: MediaRange[] = [
    { type: 'text', subtype: 'plain', q: 1 },
    { type: '*', subtype: '*', q: 1 },
    { type: 'application', subtype: 'json', q: 1 },
  ];
  const matches = (x: string, y: string) => x === '*' || y === '*' || x === y;
  const compatible = parseAccept(accept).flatMap((a) =>
    producible
      .filter((p) => matches(a.type, p.type) && matches(a.subtype, p.subtype))
      // The more specific of the two, with the requested quality.
      .map((p) => ({ ...(specificity(a) >= specificity(p) ? a : p), q: a.q })),
  );
  compatible.sort((x, y) => bySpecificity(x, y) || y.q - x.q);
  for (const m of compatible) {
    if (m.type !== '*' && m.subtype !== '*') return `${m.type}/${m.subtype}`;
    if (m.type === '*' || m.type === 'application') return 'application/octet-stream';
  }
  // Spring answers 406 here; a String converter writes anything, so say what it is.
  return 'text/plain';
}

const specificity = (m: MediaRange) => (m.type === '*' ? 0 : m.subtype === '*' ? 1 : 2);

const wild = (part: string) => (part === '*' ? 1 : 0);

/** Spring's `MediaType.SPECIFICITY_COMPARATOR`: wildcards last within one type; different types are equal. */
function bySpecificity(x: MediaRange, y: MediaRange): number {
  const byType = wild(x.type) - wild(y.type);
  return byType !== 0 || x.type !== y.type ? byType : wild(x.subtype) - wild(y.subtype);
}

function parseAccept(accept: string | undefined): MediaRange[] {
  if (accept === undefined || accept.trim() === '') return [{ type: '*', subtype: '*', q: 1 }];
  return accept.split(',').flatMap((part) => {
    const [range, ...params] = part.split(';').map((s) => s.trim());
    if (range === '') return [];
    // Java's `*` alone means `*/*`.
    const [type, subtype = '*'] = (range === '*' ? '*/*' : range).toLowerCase().split('/');
    const qParam = params.find((p) => /^q\s*=/i.test(p));
    const q = qParam === undefined ? 1 : Number(qParam.split('=')[1]);
    return [{ type, subtype, q: Number.isFinite(q) ? q : 1 }];
  });
}
