import type { CompatRoute } from './settings';
import type { PoolStore } from '../pool/pool-store';
import type { RequestHandler } from 'express';
import type { Clock } from '../clock';
import type { EntityRegistry } from '../entities/registry';
import type { Logger } from '../logger';
import type { Demand } from '../pool/demand';
import type { SqlSegmentAllocator } from '../segment/allocator';
import type { IdExplanation } from '../snowflake/explain';
import type { AuthFailureLimiter } from './auth';
import type { IdempotencyStore } from '../idempotency/store';
import type { SegmentLeaser } from '../segment/lease';
import type { NumberAdmin } from '../pool/period-pools';
import type { NumberView } from '../ops/period-forecast';
import type { OpsSampler } from '../ops/sampler';
import type { GaplessSeries } from '../gapless/series';
import type { TakeService } from '../take/take-service';

// In a file of its own so route modules take narrow slices of it without importing the app.

/** What `deps.readiness()` found; `/readyz` shows it with failures reduced to their kind. */
export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, string>;
  /** Why not ready when it is not a failed check (shutting down). */
  reason?: string;
  /** Failed checks that do not make the instance unready: a live cutover's incumbent database (docs/migrating.md). */
  degraded?: string[];
  /** Checks of what every instance shares (database, Redis, the lease while one of those fails): see `degradeShared`. */
  shared?: string[];
  /** How current the ops sampler's view is; not part of `ready`: stale monitoring must not become an outage. */
  sampling?: ReturnType<OpsSampler['health']>;
}

/** Everything `createHttpApp` is built from, by concern; every part is always there: no route asks if it was given. */
export interface HttpDeps {
  registry: Pick<
    EntityRegistry,
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
  /** The one take of every face: `count` ids of the entity, whatever its kind. */
  takes: Pick<TakeService, 'take'>;
  idempotency: IdempotencyStore;
  /** Explains a snowflake id (`GET /apps/:key/ids/:id`); throws NotAnIdError when it is not one of this layout's. */
  snowflake: { decode(id: string): IdExplanation };
  /** Segments leased to clients that issue ids themselves. */
  leases: Pick<SegmentLeaser, 'lease'>;
  /** Each entity's line as the admin API reads and moves it. */
  lines: {
    /** Pool sizes of a page in one round trip, a pool's head, a held entity's pool dropped (direct consumers pop none). */
    pools: Pick<PoolStore, 'sizes' | 'next' | 'discard'>;
    /** `current_offset` of a page in one query; live cutovers' lines read now, and their move onto idpool's table. */
    offsets: Pick<SqlSegmentAllocator, 'peekMany' | 'liveLines' | 'finishLive'>;
    /** Target depth and watermark of each pool (they move with demand). */
    demand: Pick<Demand, 'sizing'>;
    /** Moves an entity's line up (`Refiller.raise`): database, then its pool discarded and fenced. */
    raise(entityKey: string, atLeast: bigint): Promise<bigint>;
  };
  /** Business numbers (docs/numbers.md): a period's raise and now's use, the sampler's reading of it, and gapless series. */
  numbers: NumberAdmin & {
    /** The ops sampler's latest reading of a business-number entity's period, with its rate and forecast. */
    view(entityKey: string): NumberView | undefined;
    /** Gapless series: void, the ledger, the audit and the reconcile after a restore. */
    gapless: Pick<GaplessSeries, 'void' | 'page' | 'audit' | 'reconcile'>;
  };
  /** What probes, scrapers, operators and the dashboard read. */
  operations: {
    readiness(): Promise<ReadinessReport>;
    metrics(): Promise<{ contentType: string; body: string }>;
    /** Pools, forecasts, leases and alarms for the dashboard (`GET /admin/ops`), and the fleet's instances. */
    overview(query: { limit: number; search?: string }): Promise<unknown>;
    instances(): Promise<unknown>;
    /** The worker leases (`GET /admin/workers`). */
    workers(): Promise<unknown[]>;
  };
  /** Runs first on every request: request log line, request id, duration histogram (src/ops). */
  observe: RequestHandler;
  /** True once shutdown began: responses then close their connection, so keep-alive clients move on. */
  draining: () => boolean;
  /** The admin token; if set, the read-only ops token and the one `/metrics` requires (open without it). */
  tokens: { admin: string; ops?: string; metrics?: string };
  authFailures: AuthFailureLimiter;
  /** Other protocols served besides idpool's own (IDPOOL_COMPAT). */
  compat: readonly CompatRoute[];
  /** The clock of `/readyz`'s cache, the 503 alarm's limiter and Leaf's and Tinyid's error timestamps. */
  clock: Pick<Clock, 'monotonic' | 'now'>;
  log: Logger;
}
