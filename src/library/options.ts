import type { Clock } from '../clock';
import { DEFAULT_DATABASE_URL } from '../db/database-url';
import type { Database } from '../db/database';
import type { EntityConfig } from '../entities/entity';
import type { Logger } from '../logger';
import type { SegmentAllocator } from '../segment/allocator';
import type { DatabaseBehindReport } from '../segment/high-water';
import type { NumberCounter } from '../segment/number-counter';
import { IdStride } from '../segment/stride';
import { InvalidOptionError } from './errors';

/** Where the library reads an entity's configuration (`EntityStore` in production). */
export interface EntitySource {
  findLive(entityKey: string): Promise<LiveEntity | undefined>;
}

/** What the library reads of an entity; `delta`/`remainder` absent: consecutive numbers (delta 1). */
export type LiveEntity = Pick<EntityConfig, 'mode' | 'step'> &
  Partial<Pick<EntityConfig, 'delta' | 'remainder' | 'numbers' | 'gapless'>>;

/** Where a generator without database credentials leases its segments. */
export interface ServiceOptions {
  /** Base URL(s) of idpool instances, tried in turn on failure. */
  url: string | readonly string[];
  /** Each entity's secret, by key: only these entities are served. They must be `trend` entities. */
  secrets: Readonly<Record<string, string>>;
}

export interface IdGeneratorOptions {
  /** The service's database: `mysql://user:pass@host:3306/db`, `postgres://…` or `sqlite:PATH`; `database` wins. */
  databaseUrl?: string;
  /** Lease `trend` segments from an idpool service instead: only `ids`, `prefetchAt`, `maxStep`, `targetSegmentMs`, `waitMs` apply. */
  service?: ServiceOptions;
  /** An already open database (see `openDatabase`); the generator does not close it. */
  database?: Database;
  /** Run schema migrations when opening `databaseUrl` (the service normally owns the schema). */
  migrate?: boolean;
  /** `'bigint'` (default) or `'number'`: then ids from 2^53 up throw {@link UnsafeNumberIdError}. */
  ids?: 'bigint' | 'number';
  /** The n-th number becomes id `n·strideCount + strideIndex`; must match the service's IDPOOL_CLUSTER_COUNT/INDEX. */
  strideCount?: number;
  strideIndex?: number;
  /** @deprecated Use `strideCount`; this name is removed in the next release. */
  clusterCount?: number;
  /** @deprecated Use `strideIndex`; this name is removed in the next release. */
  clusterIndex?: number;
  /** Share of a segment used before the next one starts loading (0 ≤ x < 1). */
  prefetchAt?: number;
  /** Upper bound of the adaptive step (it never goes below the entity's own step). */
  maxStep?: number;
  /** The adaptive step aims for one reservation per this many ms. */
  targetSegmentMs?: number;
  /** How long `nextAsync`/`take`/`open` wait for a segment before {@link SegmentsNotReadyError}. */
  waitMs?: number;
  /** After a failed reservation, callers get that error for this long before the next attempt. */
  retryDelayMs?: number;
  /** How often an entity's configuration (its step) is read again. */
  configRefreshMs?: number;
  /**
   * A reservation came back below this process's own last one: the database went back (a restore, a lagging
   * replica). The entity is already carried past it; other processes' reservations go unseen (docs/ha.md).
   */
  onDatabaseBehind?: (report: DatabaseBehindReport) => void;
  clock?: Clock;
  log?: Logger;
}

/** What tests hand a generator in place of the database (`createIdGeneratorWith`); not public options. */
export interface GeneratorSeams {
  /** Reserves segments (default: SQL on the database). */
  allocator?: SegmentAllocator;
  /** Entity configuration (default: the `application` table). */
  entities?: EntitySource;
  /** Seam for tests: business numbers' period counters (default: the `number_period` table). */
  numberCounter?: NumberCounter;
}

/** Defaults, in one place; each says where its number comes from. */
export const DEFAULT_OPTIONS = {
  /** The service's embedded default, so the two share entities out of the box. */
  databaseUrl: DEFAULT_DATABASE_URL,
  ids: 'bigint',
  strideCount: 1,
  strideIndex: 0,
  /** Leaf starts the background load once 10% of the current segment is used. */
  prefetchAt: 0.1,
  /** 10M: at 50M ids/s a segment lasts 200 ms; a stopped process wastes at most 20M of a 2^63 line. */
  maxStep: 10_000_000,
  /** About one reservation a second per busy entity and process: negligible database load. */
  targetSegmentMs: 1000,
  /** Long enough for a reservation on a loaded database, short enough to fail a request visibly. */
  waitMs: 2000,
  /** Bounds retries against a database that is down to 10/s per entity. */
  retryDelayMs: 100,
  /** A changed step is picked up within this long; costs one SELECT per entity per interval at most. */
  configRefreshMs: 10_000,
} as const;

const SETTINGS = ['prefetchAt', 'maxStep', 'targetSegmentMs', 'waitMs', 'retryDelayMs', 'configRefreshMs'] as const;

/** The tuning part of the options, every field set. */
export type Settings = Required<Pick<IdGeneratorOptions, (typeof SETTINGS)[number]>>;

/** The tuning options, defaulted and validated once (throws {@link InvalidOptionError} naming the option). */
export function settingsFrom(options: IdGeneratorOptions): Settings {
  const s = Object.fromEntries(SETTINGS.map((name) => [name, options[name] ?? DEFAULT_OPTIONS[name]])) as Settings;
  if (!(s.prefetchAt >= 0 && s.prefetchAt < 1))
    throw new InvalidOptionError('prefetchAt', `prefetchAt must be at least 0 and below 1, got ${s.prefetchAt}`);
  if (!Number.isSafeInteger(s.maxStep) || s.maxStep < 1)
    throw new InvalidOptionError('maxStep', `maxStep must be a positive integer, got ${s.maxStep}`);
  for (const name of ['targetSegmentMs', 'waitMs', 'retryDelayMs', 'configRefreshMs'] as const) {
    if (!Number.isFinite(s[name]) || s[name] < 0)
      throw new InvalidOptionError(name, `${name} must be a non-negative number of ms, got ${s[name]}`);
  }
  return s;
}

/** `ids`, defaulted and checked. */
export function idTypeFrom(options: IdGeneratorOptions): 'bigint' | 'number' {
  // JavaScript callers may pass anything.
  const ids: unknown = options.ids ?? DEFAULT_OPTIONS.ids;
  if (ids !== 'bigint' && ids !== 'number')
    throw new InvalidOptionError('ids', `ids must be 'bigint' or 'number', got ${String(ids)}`);
  return ids;
}

/** `strideCount`/`strideIndex` (or their deprecated names `clusterCount`/`clusterIndex`) as an {@link IdStride}. */
export function strideFrom(options: IdGeneratorOptions): IdStride {
  const count = strideOption(options, 'strideCount', 'clusterCount');
  const index = strideOption(options, 'strideIndex', 'clusterIndex');
  try {
    return new IdStride(count.value ?? DEFAULT_OPTIONS.strideCount, index.value ?? DEFAULT_OPTIONS.strideIndex);
  } catch (err) {
    throw new InvalidOptionError(count.name, (err as Error).message);
  }
}

/** A stride option under its name or its deprecated one (both given must agree), with the name the caller used. */
function strideOption(
  options: IdGeneratorOptions,
  name: 'strideCount' | 'strideIndex',
  deprecated: 'clusterCount' | 'clusterIndex',
): { value: number | undefined; name: string } {
  const value = options[name];
  const old = options[deprecated];
  if (value !== undefined && old !== undefined && value !== old)
    throw new InvalidOptionError(name, `${name} ${value} and its deprecated name ${deprecated} ${old} disagree`);
  return value === undefined && old !== undefined ? { value: old, name: deprecated } : { value, name };
}
