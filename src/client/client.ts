import { randomUUID } from 'node:crypto';
import { IdpoolClientError } from './errors';
import { type LeaseAnswer, type LeaseOptions, type LeasedIds, leasedIds } from './leased-ids';
import { type BufferOptions, TrendBuffer } from './trend-buffer';
import { type ClientClock, type ClientSeams, TRANSPORT_DEFAULTS, Transport, systemClientClock } from './transport';

export type EntityMode = 'monotonic' | 'trend' | 'snowflake';

/** One entity the client takes ids for. */
export interface EntityOptions {
  /** The entity's app secret (from `POST /admin/apps` or `idpool apps create`). */
  secret: string;
  /** The entity's mode, as registered. Default `monotonic`, the safe assumption: ids straight from the service's pool. */
  mode?: EntityMode;
  /** A local buffer of prefetched ids; only for `trend` entities. */
  buffer?: BufferOptions;
  /** Ids from segments the service leases, `client.leased(key).next()` synchronous; `trend` only, not with `buffer`. */
  lease?: LeaseOptions;
}

export interface IdpoolClientOptions {
  /** Base URLs of idpool instances, e.g. `http://idpool-a:8080`; tried in turn on failure. */
  endpoints: string | readonly string[];
  /** Entities by key. */
  entities: Record<string, EntityOptions>;
  /** One attempt's time limit (ms). Default 2000. */
  timeoutMs?: number;
  /** Time limit (ms) of one call over all its attempts and waits. Default 15000. */
  deadlineMs?: number;
  /** Attempts per call, over all endpoints. Default 20, so the deadline ends a call (a dead refill lock's 503s last up to 10 s). */
  maxAttempts?: number;
  /** How long (ms) an endpoint that failed without a Retry-After is skipped; doubles per failure in a row, up to 8 s. Default 1000. */
  downForMs?: number;
  /** Longest `Retry-After` (ms) obeyed; a longer one is cut to this. Default 30000. */
  maxRetryAfterMs?: number;
  /** Called when a background prefetch fails (the next `take` then asks the service itself). */
  onPrefetchError?: (err: unknown, entityKey: string) => void;
}

/** What a take sends beside its count (a gapless series', docs/numbers.md "Gapless series"). */
export interface TakeOptions {
  /** The caller's reference (an invoice's id, 1-128 characters), kept in the ledger beside each number. */
  reference?: string;
  /**
   * The caller's own `Idempotency-Key` (e.g. from the invoice's id): asked again with it, even from another process, the
   * service answers the same numbers (another count or reference: 409). Default: one key per call, on every attempt.
   */
  idempotencyKey?: string;
}

/** A snowflake id explained by the service (`decode`); `SnowflakeParts`, from `idpool`, is the layout's own fields of an id. */
export interface IdExplanation {
  id: string;
  /** When the id was made (start of its time unit), ISO 8601. */
  timestamp: string;
  timestampMs: number;
  worker: number;
  timeBack: number;
  sequence: number;
  reserved: number;
  [field: string]: unknown;
}

const KEY_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
const ID_PATTERN = /^\d{1,20}$/;
/** What a take may answer: decimal ids, or business numbers (`INV20261128-000123`, docs/numbers.md). */
const isTaken = (id: unknown) => typeof id === 'string' && /^[A-Za-z0-9_./-]{1,200}$/.test(id);

interface Entity {
  readonly secret: string;
  readonly buffer?: TrendBuffer;
  readonly leased?: LeasedIds<number> | LeasedIds<bigint>;
}

/**
 * Takes ids from an idpool service:
 * ```ts
 * const client = new IdpoolClient({
 *   endpoints: ['http://idpool-a:8080', 'http://idpool-b:8080'],
 *   entities: { orders: { secret: process.env.ORDERS_SECRET!, mode: 'trend', buffer: { size: 2000 } } },
 * });
 * const id = await client.next('orders'); // "100217"
 * ```
 * Ids are decimal strings (they may exceed 2^53: `BigInt(id)` for arithmetic); an entity with a `format` answers
 * business numbers (`INV20261128-000123`).
 */
export class IdpoolClient {
  private readonly transport: Transport;
  private readonly clock: ClientClock;
  private readonly entities = new Map<string, Entity>();
  private closed = false;

  constructor(options: IdpoolClientOptions) {
    const endpoints = typeof options.endpoints === 'string' ? [options.endpoints] : [...options.endpoints];
    if (endpoints.length === 0) throw new TypeError('IdpoolClient: endpoints must name at least one URL');
    for (const url of endpoints) {
      if (!/^https?:\/\/[^/]/.test(url))
        throw new TypeError(`IdpoolClient: endpoint "${url}" must be an http:// or https:// URL`);
    }
    const settings: Record<keyof typeof TRANSPORT_DEFAULTS, number> = { ...TRANSPORT_DEFAULTS };
    for (const name of Object.keys(TRANSPORT_DEFAULTS) as (keyof typeof TRANSPORT_DEFAULTS)[]) {
      const value = options[name];
      if (value === undefined) continue;
      if (!Number.isInteger(value) || value < (name === 'downForMs' ? 0 : 1))
        throw new TypeError(`IdpoolClient: ${name} must be a positive integer, got ${value}`);
      settings[name] = value;
    }
    // Tests hand these in (`seams.ts`); the public options have none.
    const seams = options as IdpoolClientOptions & ClientSeams;
    this.clock = seams.clock ?? systemClientClock;
    this.transport = new Transport({
      endpoints,
      ...settings,
      fetch: seams.fetch ?? globalThis.fetch,
      clock: this.clock,
      newIdempotencyKey: seams.idempotencyKey ?? randomUUID,
    });
    for (const [key, entity] of Object.entries(options.entities)) {
      this.entities.set(key, this.entity(key, entity, options.onPrefetchError));
    }
  }

  private entity(key: string, options: EntityOptions, onPrefetchError: IdpoolClientOptions['onPrefetchError']): Entity {
    if (!KEY_PATTERN.test(key))
      throw new TypeError(`IdpoolClient: entity key "${key}" must be 1-64 of A-Z a-z 0-9 _ - .`);
    if (typeof options.secret !== 'string' || options.secret === '')
      throw new TypeError(`IdpoolClient: entity "${key}" needs its secret`);
    const mode = options.mode ?? 'monotonic';
    if (!['monotonic', 'trend', 'snowflake'].includes(mode))
      throw new TypeError(`IdpoolClient: entity "${key}": mode must be monotonic, trend or snowflake`);
    if (options.lease) {
      if (mode !== 'trend' || options.buffer)
        throw new TypeError(
          `IdpoolClient: entity "${key}": only a trend entity without a buffer may lease segments (a monotonic order must come from the service's pool)`,
        );
      const leased = leasedIds(key, (size) => this.lease(key, options.secret, size), this.clock, options.lease);
      return { secret: options.secret, leased };
    }
    if (!options.buffer) return { secret: options.secret };
    if (mode !== 'trend')
      throw new TypeError(
        `IdpoolClient: entity "${key}" is ${mode}: only trend entities may be buffered (a monotonic order must come from the service's pool)`,
      );
    const { size, batch, refillBelow } = options.buffer;
    if (!Number.isInteger(size) || size < 1)
      throw new TypeError(`IdpoolClient: entity "${key}": buffer.size must be a positive integer`);
    if (batch !== undefined && (!Number.isInteger(batch) || batch < 1 || batch > size))
      throw new TypeError(`IdpoolClient: entity "${key}": buffer.batch must be an integer from 1 to buffer.size`);
    if (refillBelow !== undefined && (!Number.isInteger(refillBelow) || refillBelow < 0 || refillBelow > size))
      throw new TypeError(`IdpoolClient: entity "${key}": buffer.refillBelow must be an integer from 0 to buffer.size`);
    const buffer = new TrendBuffer(
      (count) => this.request(key, options.secret, count, {}),
      options.buffer,
      (err) => onPrefetchError?.(err, key),
    );
    return { secret: options.secret, buffer };
  }

  /** `count` new ids of an entity (a buffered one's from its buffer); `options` only go to the service, not with a buffer or lease. */
  async take(entityKey: string, count = 1, options: TakeOptions = {}): Promise<string[]> {
    const entity = this.known(entityKey);
    if (!Number.isInteger(count) || count < 1)
      throw new TypeError(`IdpoolClient: count must be a positive integer, got ${count}`);
    const sent = options.reference !== undefined || options.idempotencyKey !== undefined;
    if (sent && (entity.buffer || entity.leased))
      throw new TypeError(
        `IdpoolClient: entity "${entityKey}" hands out ids from this process: a reference or an idempotencyKey goes with a take from the service`,
      );
    if (entity.buffer) return entity.buffer.take(count);
    if (entity.leased) return (await entity.leased.take(count)).map(String);
    return this.request(entityKey, entity.secret, count, options);
  }

  /** One new id. */
  async next(entityKey: string): Promise<string> {
    return (await this.take(entityKey, 1))[0];
  }

  /** The leased ids of an entity configured with `lease`: a synchronous `next()` (`await leased.open()` first). */
  leased(entityKey: string): LeasedIds<number> | LeasedIds<bigint> {
    const leased = this.known(entityKey).leased;
    if (!leased) throw new TypeError(`IdpoolClient: entity "${entityKey}" was not configured with lease`);
    return leased;
  }

  /** Fills a buffered entity's buffer in the background (e.g. at start-up); no-op for others. */
  prefetch(entityKey: string): void {
    this.known(entityKey).buffer?.prefetch();
  }

  /** Ids ready in this process for a buffered entity (0 for others). */
  buffered(entityKey: string): number {
    return this.known(entityKey).buffer?.available ?? 0;
  }

  /** Explains a snowflake id of a `snowflake` entity. */
  async decode(entityKey: string, id: string | bigint): Promise<IdExplanation> {
    const entity = this.known(entityKey);
    const text = String(id);
    if (!ID_PATTERN.test(text))
      throw new TypeError(`IdpoolClient: id must be a non-negative decimal integer, got "${text}"`);
    return this.transport.send<IdExplanation>({
      method: 'GET',
      path: `/apps/${encodeURIComponent(entityKey)}/ids/${text}`,
      secret: entity.secret,
    });
  }

  /** Stops the client: later calls throw; ids still buffered or leased are dropped (never handed out). */
  close(): void {
    this.closed = true;
    for (const entity of this.entities.values()) void entity.leased?.close();
  }

  private known(entityKey: string): Entity {
    if (this.closed) throw new IdpoolClientError('IdpoolClient is closed');
    const entity = this.entities.get(entityKey);
    if (!entity) throw new TypeError(`IdpoolClient: entity "${entityKey}" was not configured (options.entities)`);
    return entity;
  }

  private lease(entityKey: string, secret: string, size: number | undefined): Promise<LeaseAnswer> {
    return this.transport.send<LeaseAnswer>({
      method: 'POST',
      path: `/apps/${encodeURIComponent(entityKey)}/segments`,
      secret,
      body: size === undefined ? {} : { size },
      // The caller waits for ids (nextAsync, take) or is told they are on their way (next): a 429 is waited out.
      waitOnRateLimit: true,
    });
  }

  private async request(entityKey: string, secret: string, count: number, options: TakeOptions): Promise<string[]> {
    const answer = await this.transport.send<{ ids?: unknown } | null>({
      method: 'POST',
      path: `/apps/${encodeURIComponent(entityKey)}/ids`,
      secret,
      body: options.reference === undefined ? { count } : { count, reference: options.reference },
      idempotencyKey: options.idempotencyKey,
    });
    const ids = answer?.ids;
    if (!Array.isArray(ids) || ids.length !== count || !ids.every(isTaken))
      throw new IdpoolClientError(`idpool answered POST /apps/${entityKey}/ids without ${count} ids`);
    return ids as string[];
  }
}
