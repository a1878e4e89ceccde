import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { type EntityConfig, KEY_PATTERN, describeEntity, registerSchema, secretMatches, updateSchema } from '../entities/entity';
import type { EntityRateLimit } from '../pool/rate-limit';
import type { EntityRegistry } from '../entities/registry';
import { systemClock } from '../clock';
import { InvalidRequestError, NotFoundError, UnauthorizedError } from '../errors';
import type { Logger } from '../logger';
import type { PoolSizing } from '../pool/demand';
import { type IdExplanation, NotAnIdError } from '../snowflake/explain';
import { AuthFailureLimiter, bearerToken, tokensEqual } from './auth';
import { dashboardRouter } from './dashboard/router';
import { errorHandler } from './errors';
import { openApiDocument } from './openapi';
import { type IdempotencyStore, answerOnce } from './idempotency';
import { publicCheck } from './readiness';
import { parseBody } from './validate';

/** Issues and explains snowflake ids for `mode: "snowflake"` entities. */
export interface SnowflakeIssuer {
  /** May wait briefly (clock rollback, exhausted sequence), hence the promise. */
  take(entityKey: string, count: number): string[] | Promise<string[]>;
  /** Explains one id; throws NotAnIdError when it is not one of this layout's. */
  decode(id: string): IdExplanation;
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, string>;
  /** Why not ready when it is not a failed check (shutting down). */
  reason?: string;
}

export interface HttpDeps {
  registry: Pick<EntityRegistry, 'find' | 'require' | 'page' | 'register' | 'update' | 'retire' | 'rotateSecret'>;
  dispatcher: { take(app: EntityConfig, count: number): Promise<string[]> };
  /** Pool sizes of a page of entities in one round trip. */
  pools: { sizes(entityKeys: readonly string[]): Promise<number[]> };
  /** Reads `current_offset` of a page of entities in one query (the allocator's `peekMany`). */
  offsets: { peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>> };
  /** Target depth and watermark of each pool (they move with demand). */
  sizing: PoolSizing;
  adminToken: string;
  snowflake?: SnowflakeIssuer;
  workers?: { list(): Promise<unknown[]> };
  /** Answers to `Idempotency-Key` requests; without it the header is validated and otherwise ignored. */
  idempotency?: IdempotencyStore;
  readiness(): Promise<ReadinessReport>;
  metrics?(): Promise<{ contentType: string; body: string }>;
  /** Runs first on every request: request log line, request id, duration histogram (src/ops). */
  observe?: RequestHandler;
  /** True once shutdown began: responses then close their connection, so keep-alive clients move on. */
  draining?(): boolean;
  /** Pools, forecasts, leases and alarms for the dashboard (`GET /admin/ops`). */
  ops?: { overview(query: { limit: number; search?: string }): Promise<unknown> };
  log: Logger;
  /** `maxSizePerSecond` of snowflake entities (segment entities are limited by the pool's pop). */
  snowflakeRate?: EntityRateLimit;
  /** Bearer token `/metrics` requires; open when undefined. */
  metricsToken?: string;
  /** Failed authentications per client address (429 past its limit); one is made when absent. */
  authFailures?: AuthFailureLimiter;
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

/** Page size of `GET /admin/apps` (DESIGN.md "HTTP API"): a page costs one Redis round trip and one query whatever its size. */
const PAGE_DEFAULT = 100;
const PAGE_MAX = 1000;

/** `?limit=` and `?after=` of a paged list; anything else is a 400 that changes nothing. */
function pageParams(req: Request): { after: string | undefined; limit: number } {
  const after = req.query.after;
  const limit = limitParam(req, PAGE_DEFAULT);
  if (after !== undefined && (typeof after !== 'string' || !KEY_PATTERN.test(after))) {
    throw new InvalidRequestError('after must be an entity key (1-64 of A-Z a-z 0-9 _ - .), the "next" of the previous page');
  }
  return { after, limit };
}

/** `?limit=`: an integer from 1 to PAGE_MAX, `fallback` when absent. */
function limitParam(req: Request, fallback: number): number {
  const raw = req.query.limit;
  if (raw === undefined) return fallback;
  if (typeof raw !== 'string' || !/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > PAGE_MAX) {
    throw new InvalidRequestError(`limit must be an integer from 1 to ${PAGE_MAX}`);
  }
  return Number(raw);
}

/** Rows of the dashboard overview unless `?limit=` says otherwise: a screenful of the busiest entities. */
const OPS_DEFAULT_ROWS = 50;
/** Compared against when the key is unknown, so both failures cost the same. */
const UNKNOWN_KEY_HASH = '0'.repeat(64);

/** Largest JSON body accepted; registrations and counts are far smaller. */
const BODY_LIMIT = '16kb';

function entityKeyParam(req: Request): string {
  const key = req.params.key as string;
  if (!KEY_PATTERN.test(key)) throw new InvalidRequestError('key must be 1-64 of A-Z a-z 0-9 _ - .');
  return key;
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

export function createHttpApp(deps: HttpDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (deps.observe) app.use(deps.observe);
  const draining = deps.draining;
  if (draining) {
    app.use((_req, res, next) => {
      if (draining()) res.setHeader('Connection', 'close');
      next();
    });
  }
  app.use(express.json({ limit: BODY_LIMIT, strict: false }));

  const authFailures = deps.authFailures ?? new AuthFailureLimiter(systemClock);
  const clientAddress = (req: Request) => req.socket.remoteAddress ?? 'unknown';

  const requireAdmin = async (req: Request, _res: Response, next: NextFunction) => {
    await authFailures.guard(clientAddress(req), () => {
      if (!tokensEqual(bearerToken(req), deps.adminToken)) throw new UnauthorizedError('invalid admin token');
    });
    next();
  };

  /**
   * The app named in the path, authenticated by its secret. An unknown key
   * and a wrong secret get the same 401 (and take the same hash compare), so
   * keys cannot be probed.
   */
  async function authenticatedApp(req: Request): Promise<EntityConfig> {
    const key = entityKeyParam(req);
    return authFailures.guard(clientAddress(req), async () => {
      const token = bearerToken(req);
      const found = await deps.registry.find(key);
      const matches = secretMatches(token, found?.secretHash ?? UNKNOWN_KEY_HASH);
      if (!found || !matches) throw new UnauthorizedError('unknown entity key or invalid secret');
      return found;
    });
  }

  app.post('/apps/:key/ids', async (req, res) => {
    const entity = await authenticatedApp(req);
    const count = requestedCount(req, entity.maxSizePerTimes);
    const take = async (): Promise<string[]> => {
      if (entity.mode !== 'snowflake') return deps.dispatcher.take(entity, count);
      if (!deps.snowflake) throw new NotFoundError('snowflake ids are not enabled on this instance');
      await deps.snowflakeRate?.admit(entity.key, count, entity.maxSizePerSecond);
      return deps.snowflake.take(entity.key, count);
    };
    const { ids, replayed } = await answerOnce(deps.idempotency, req, entity.key, count, take);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.json({ ids });
  });

  app.get('/apps/:key/ids/:id', async (req, res) => {
    const entity = await authenticatedApp(req);
    if (entity.mode !== 'snowflake' || !deps.snowflake) throw new InvalidRequestError(`entity "${entity.key}" does not issue snowflake ids; only those can be decoded`);
    res.json(decodeOr400(deps.snowflake, req.params.id as string));
  });

  const admin = express.Router();
  admin.use(requireAdmin);

  /** Config, `currentOffset` and pool of each entity: one SQL query and one Redis round trip for all of them. */
  const withPools = async (entities: readonly EntityConfig[], fresh?: 'just registered') => {
    const pooled = entities.filter((e) => e.mode !== 'snowflake');
    // A key is never registered twice, so a just-registered entity has reserved nothing and pooled nothing yet.
    const [offsets, sizes] = fresh
      ? [new Map(entities.map((e) => [e.key, e.startOffset])), pooled.map(() => 0)]
      : await Promise.all([deps.offsets.peekMany(entities.map((e) => e.key)), deps.pools.sizes(pooled.map((e) => e.key))]);
    const sizeOf = new Map(pooled.map((e, i) => [e.key, sizes[i]]));
    return entities.map((entity) => {
      const view: Record<string, unknown> = { ...describeEntity(entity) };
      view.currentOffset = (offsets.get(entity.key) ?? entity.startOffset).toString();
      if (entity.mode !== 'snowflake') {
        view.pool = { size: sizeOf.get(entity.key) ?? 0, target: deps.sizing.target(entity), max: entity.maxPoolSize, lowWatermark: deps.sizing.lowWatermark(entity) };
      }
      return view;
    });
  };
  const withPool = async (entity: EntityConfig) => (await withPools([entity]))[0];

  admin.post('/apps', async (req, res) => {
    const input = parseBody(registerSchema, req.body);
    const { app: created, secret } = await deps.registry.register(input);
    // Described as inserted: no SQL query or Redis round trip on the registration path.
    const [view] = await withPools([created], 'just registered');
    res.status(201).json({ ...view, secret });
  });

  admin.get('/apps', async (req, res) => {
    const { after, limit } = pageParams(req);
    const page = deps.registry.page(after, limit);
    res.json({ apps: await withPools(page.apps), next: page.next });
  });

  admin.get('/apps/:key', async (req, res) => {
    res.json(await withPool(await deps.registry.require(entityKeyParam(req))));
  });

  admin.patch('/apps/:key', async (req, res) => {
    const key = entityKeyParam(req);
    const patch = parseBody(updateSchema, req.body);
    res.json(await withPool(await deps.registry.update(key, patch)));
  });

  admin.delete('/apps/:key', async (req, res) => {
    await deps.registry.retire(entityKeyParam(req));
    res.status(204).end();
  });

  admin.post('/apps/:key/secret', async (req, res) => {
    res.json({ secret: await deps.registry.rotateSecret(entityKeyParam(req)) });
  });

  admin.get('/workers', async (_req, res) => {
    res.json({ workers: deps.workers ? await deps.workers.list() : [] });
  });

  admin.get('/ops', async (req, res) => {
    if (!deps.ops) throw new NotFoundError('the ops overview is not enabled');
    const q = req.query.q;
    const limit = limitParam(req, OPS_DEFAULT_ROWS);
    if (q !== undefined && (typeof q !== 'string' || (q !== '' && !KEY_PATTERN.test(q)))) {
      throw new InvalidRequestError('q must be part of an entity key: up to 64 of A-Z a-z 0-9 _ - .');
    }
    res.json(await deps.ops.overview({ limit, search: q || undefined }));
  });

  // The dashboard page holds no data and is served without a token (see dashboard/router.ts).
  app.use('/admin/ui', dashboardRouter());
  app.use('/admin', admin);

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/readyz', async (_req, res) => {
    const report = await deps.readiness();
    if (!report.ready) res.setHeader('Retry-After', '1');
    const checks = Object.fromEntries(Object.entries(report.checks).map(([k, v]) => [k, publicCheck(k, v)]));
    const failed = Object.entries(checks).filter(([, v]) => v !== 'ok');
    const reason = report.reason ?? (failed.length ? failed.map(([k, v]) => `${k}: ${v}`).join('; ') : undefined);
    res.status(report.ready ? 200 : 503).json({ status: report.ready ? 'ready' : 'not_ready', ...(report.ready ? {} : { reason }), checks });
  });

  app.get('/metrics', async (req, res) => {
    const metricsToken = deps.metricsToken;
    if (metricsToken !== undefined) {
      await authFailures.guard(clientAddress(req), () => {
        if (!tokensEqual(bearerToken(req), metricsToken)) throw new UnauthorizedError('invalid metrics token');
      });
    }
    if (!deps.metrics) throw new NotFoundError('metrics are not enabled');
    const { contentType, body } = await deps.metrics();
    res.setHeader('Content-Type', contentType);
    res.send(body);
  });

  const openapi = openApiDocument();
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });

  app.use((req, _res) => {
    throw new NotFoundError(`no route ${req.method} ${req.path}`);
  });
  app.use(errorHandler(deps.log));
  return app;
}
