import type { CompatRoute } from './settings';
import type { PoolStore } from '../pool/pool-store';
import type { RequestHandler } from 'express';
import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import type { EntityRegistry } from '../entities/registry';
import type { Logger } from '../logger';
import type { Demand } from '../pool/demand';
import type { SegmentAllocator, SqlSegmentAllocator } from '../segment/allocator';
import type { TakenIds } from '../pool/taken-ids';
import type { IdExplanation } from '../snowflake/explain';
import type { AuthFailureLimiter } from './auth';
import type { IdempotencyStore } from '../idempotency/store';
import type { LeasedSegment } from '../segment/lease';
import type { NumberAdmin } from '../pool/number-takes';
import type { NumberView } from '../ops/period-forecast';
import type { GaplessSeries } from '../gapless/series';
import type { TakeRequest } from '../take/take-service';

// What the HTTP app is built from, in a file of its own so the route modules
// can take narrow slices of it without importing the app that mounts them.

/** Explains snowflake ids of `mode: "snowflake"` entities. */
export interface SnowflakeDecoder {
  /** Explains one id; throws NotAnIdError when it is not one of this layout's. */
  decode(id: string): IdExplanation;
}

/** What `deps.readiness()` found; `/readyz` shows it with failures reduced to their kind. */
export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, string>;
  /** Why not ready when it is not a failed check (shutting down). */
  reason?: string;
  /** Failed checks that do not make the instance unready: a live cutover's incumbent database (docs/migrating.md). */
  degraded?: string[];
  /**
   * Checks of what every instance shares (the database, Redis, an
   * incumbent's database; the worker lease while one of those fails): with
   * `/readyz?shared=degrade` their failure degrades the answer instead of
   * failing it, since taking every instance out at once turns 503s with
   * Retry-After into refused connections.
   */
  shared?: string[];
  /**
   * How current the ops sampler's view (dashboard, pool gauges, pool
   * alarms) is. Reported, but not part of `ready`: stale monitoring does not
   * stop this instance from serving ids, and taking it out of rotation for
   * that would turn a monitoring fault into an outage.
   */
  sampling?: { ok: boolean; oldestSampleAgeSeconds: number; roundSeconds: number; staleEntities: number };
}

/** Everything `createHttpApp` is built from; each route module takes only the part it uses. */
export interface HttpDeps {
  /** Other protocols served besides idpool's own (IDPOOL_COMPAT); none when absent. */
  compat?: readonly CompatRoute[];
  registry: Pick<
    EntityRegistry,
    | 'find'
    | 'findByTag'
    | 'require'
    | 'page'
    | 'list'
    | 'register'
    | 'update'
    | 'retire'
    | 'rotateSecret'
    | 'addSecret'
    | 'removeSecret'
    | 'authenticate'
    | 'firstNumberFrom'
    | 'refresh'
    | 'setHeld'
  >;
  /** Live cutovers (`SqlSegmentAllocator`): the live entities' lines read now, and the move onto idpool's table. */
  cutover?: Pick<SqlSegmentAllocator, 'liveLines' | 'finishLive'>;
  /** Moves an entity's line up (`Refiller.raise`): database, then its pool discarded and fenced. */
  lines?: { raise(entityKey: string, atLeast: bigint): Promise<bigint> };
  /** The one take of every face (`TakeService`): `count` ids of the entity, whatever its kind. */
  takes: { take(entity: EntityConfig, count: number, request?: TakeRequest): Promise<TakenIds> };
  /** Gapless series (docs/numbers.md "Gapless series"): void, the ledger, the audit and the reconcile after a restore. */
  gapless?: Pick<GaplessSeries, 'void' | 'page' | 'audit' | 'reconcile'>;
  /** Business numbers (entities with a `format`, docs/numbers.md): the admin raise of one period, and now's period's use. */
  numbers?: NumberAdmin;
  /** The ops sampler's latest reading of a business-number entity's period, with its rate and forecast. */
  numberViews?: (entityKey: string) => NumberView | undefined;
  /** Pool sizes of a page of entities in one round trip. */
  poolStore: Pick<PoolStore, 'sizes' | 'next'>;
  /** Drops a held entity's pool (`POST /admin/apps/:key/hold`), so a direct consumer pops nothing from it. */
  heldPools?: Pick<PoolStore, 'discard'>;
  /** Reads `current_offset` of a page of entities in one query (the allocator's `peekMany`). */
  allocator: Pick<SegmentAllocator, 'peekMany'>;
  /** Target depth and watermark of each pool (they move with demand). */
  demand: Pick<Demand, 'target' | 'lowWatermark' | 'sizing'>;
  adminToken: string;
  /** Explains snowflake ids (`GET /apps/:key/ids/:id`); that route answers 400 without it. */
  snowflake?: SnowflakeDecoder;
  /** Segments leased to clients that issue ids themselves (`SegmentLeaser`); the lease routes answer 404 without it. */
  leases?: { lease(entity: EntityConfig, size?: number): Promise<LeasedSegment> };
  workers?: { list(): Promise<unknown[]> };
  /** Answers to `Idempotency-Key` requests; without it the header is validated and otherwise ignored. */
  idempotency?: IdempotencyStore;
  readiness(): Promise<ReadinessReport>;
  metrics?(): Promise<{ contentType: string; body: string }>;
  /** Runs first on every request: request log line, request id, duration histogram (src/ops). */
  observe?: RequestHandler;
  /** True once shutdown began: responses then close their connection, so keep-alive clients move on. */
  draining?: () => boolean;
  /** Pools, forecasts, leases and alarms for the dashboard (`GET /admin/ops`). */
  ops?: { overview(query: { limit: number; search?: string }): Promise<unknown>; instances(): Promise<unknown> };
  log: Logger;
  /** Bearer token `/metrics` requires (the ops token is accepted too); open when undefined. */
  metricsToken?: string;
  /** Read-only operator token: the dashboard, `GET /admin/*` and `/metrics`; no writes. */
  opsToken?: string;
  /** The clock of `/readyz`'s cache, the default failure limiter, the 503 alarm's limiter and Leaf's and Tinyid's error timestamps; the system's when absent. */
  clock?: Pick<Clock, 'monotonic' | 'now'>;
  /** Failed authentications per client address (429 past its limit); one is made when absent. */
  authFailures?: AuthFailureLimiter;
}
