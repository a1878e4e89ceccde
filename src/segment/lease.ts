import { ConflictError, GaplessNotServedError, InvalidRequestError, RateLimitedError, refuseHeld } from '../errors';
import type { SegmentAllocator } from './allocator';
import type { IdStride } from './stride';

/** Most numbers one lease may reserve: it bounds what a crashed client wastes; half a second of a leased buffer at its 20M ids/s target. */
export const MAX_LEASE_SIZE = 10_000_000;

/** Ids a client issues itself: `first`, `first + delta`, … `last`, each `≡ remainder (mod delta)`; Tinyid's `(first − 1, last]`. */
export interface LeasedSegment {
  readonly first: bigint;
  readonly last: bigint;
  readonly count: number;
  readonly delta: number;
  readonly remainder: number;
}

/** What a lease needs of its entity (an `EntityConfig` fits; `entities/` sits above this folder). */
export interface LeaseEntity {
  readonly key: string;
  readonly mode: 'monotonic' | 'trend' | 'snowflake';
  readonly step: number;
  readonly maxSizePerSecond: number;
  /** The entity's own spacing, composed with the deployment stride (`IdStride.of`). */
  readonly delta: number;
  readonly remainder: number;
  /** Why it is held (served on no route), if it is. */
  readonly held?: string | null;
  /** Set for business numbers, which no client can lease (`numbers/scheme.ts`). */
  readonly numbers?: unknown;
  /** A gapless series: refused with its own code, `gapless_not_served_here`. */
  readonly gapless?: boolean;
}

/** What a lease reports: the ops metrics count leases and their ids per entity. */
export interface LeaseEvents {
  leased(entityKey: string, count: number): void;
  rateLimited(entityKey: string): void;
}

/** The entity's per-second budget, shared with its takes (`pool/rate-limit.ts`). */
export interface LeaseRateLimit {
  /** Counts `count` ids against this second's budget, or throws 429 with Retry-After. */
  admit(entityKey: string, count: number, maxPerSecond: number): Promise<void>;
}

export interface SegmentLeaserOptions {
  allocator: Pick<SegmentAllocator, 'reserve'>;
  stride: IdStride;
  rate: LeaseRateLimit;
  events: LeaseEvents;
}

/**
 * Leases segments to clients that issue ids themselves (the SDK's leased buffer, Tinyid's `nextSegmentId`),
 * reserved in SQL like a refill's, so never overlapping a pool's, and costing no pool ids. Only `trend`
 * entities: a client's own segment cannot keep the one global order a `monotonic` entity promises.
 */
export class SegmentLeaser {
  constructor(private readonly options: SegmentLeaserOptions) {}

  /** `size` numbers (default: the entity's step) of a live `trend` entity; 400 / 409 / 429 change nothing. */
  async lease(entity: LeaseEntity, size: number = entity.step): Promise<LeasedSegment> {
    refuseHeld(entity);
    if (entity.gapless)
      throw new GaplessNotServedError(entity.key, 'as segment leases (a client issuing alone writes no ledger)');
    if (entity.numbers !== undefined)
      throw new ConflictError(
        `entity "${entity.key}" issues business numbers: their period is decided by one clock for the whole deployment and their counter restarts each period, which a client issuing from its own segment cannot keep; take them with POST /apps/${entity.key}/ids`,
      );
    if (entity.mode !== 'trend')
      throw new ConflictError(
        entity.mode === 'monotonic'
          ? `entity "${entity.key}" is monotonic: its ids must come in one global order, which ids a client issues from its own segment cannot keep; take them with POST /apps/${entity.key}/ids, or use a trend entity`
          : `entity "${entity.key}" issues snowflake ids; only trend entities lease segments`,
      );
    const max = leaseSizeLimit(entity);
    if (!Number.isSafeInteger(size) || size < 1 || size > max) {
      const why = max < MAX_LEASE_SIZE ? ` (the entity's maxSizePerSecond: a lease counts against it)` : '';
      throw new InvalidRequestError(`size must be an integer from 1 to ${max}${why}`);
    }
    await this.options.rate.admit(entity.key, size, entity.maxSizePerSecond).catch((err: unknown) => {
      if (err instanceof RateLimitedError) this.options.events.rateLimited(entity.key);
      throw err;
    });
    const { start, end } = await this.options.allocator.reserve(entity.key, size);
    this.options.events.leased(entity.key, size);
    const stride = this.options.stride.of(entity);
    return {
      first: stride.toId(start),
      last: stride.toId(end - 1n),
      count: size,
      delta: stride.count,
      remainder: stride.index,
    };
  }
}

/** The largest lease of the entity: {@link MAX_LEASE_SIZE}, and no more than its per-second limit admits. */
export function leaseSizeLimit(entity: Pick<LeaseEntity, 'maxSizePerSecond'>): number {
  return entity.maxSizePerSecond > 0 ? Math.min(MAX_LEASE_SIZE, entity.maxSizePerSecond) : MAX_LEASE_SIZE;
}
