import type { Clock } from '../clock';
import type { EntityConfig } from '../entities/entity';
import type { AlarmRecord, Alarms } from './alarms';
import { busiest } from './busiest';
import type { EntityOverview } from './dashboard-rows';
import { isoDate } from './format';
import type { SnowflakeForecast } from './forecast';
import type { OpsSampler, SamplingHealth } from './sampler';

/** A snowflake entity on the dashboard: no pool, only how fast this instance hands out its ids. */
export interface SnowflakeEntityOverview {
  key: string;
  mode: 'snowflake';
  /** Ids per second served by this instance (snowflake ids are made locally; other instances count their own). */
  takePerSecond: number;
}

/** Which entities `GET /admin/ops` shows: the busiest `limit`, of those whose key contains `search` when given. */
export interface OverviewQuery {
  limit: number;
  search?: string;
}

/** Everything the dashboard shows, in one JSON document (`GET /admin/ops`). */
export interface OpsOverview {
  at: string;
  /** Live entities in all. */
  entityCount: number;
  /** Entities matching the search (all of them without one); `entities` holds the busiest of these. */
  matching: number;
  entities: (EntityOverview | SnowflakeEntityOverview)[];
  /** Dates past year 275760 are null ("never"). */
  snowflake: { timeExhaustedAt: string | null; jsSafeLimitAt: string | null } | null;
  /** How current the rows are: an entity not sampled within two rounds is marked `stale`. */
  sampling: SamplingHealth;
  workers: unknown[];
  /** This instance's alarms only (each keeps its own), with its name. */
  alarms: { instance: string; active: number; recent: AlarmRecord[] };
}

/** What the overview reads: the registry, the sampler's forecasts, this instance's recent served rates, alarms. */
export interface OverviewSources {
  clock: Clock;
  entities: { list(): EntityConfig[] };
  sampler: Pick<OpsSampler, 'forecast' | 'overview' | 'health'>;
  /** Ids per second each entity was recently served by this instance. */
  localRates(): Map<string, number>;
  alarms: Pick<Alarms, 'activeAlarms' | 'recent' | 'instance'>;
  snowflake?: () => SnowflakeForecast | undefined;
  workers?: { list(): Promise<unknown[]> };
}

/** The dashboard's document (`GET /admin/ops`): the busiest matching entities, the snowflake horizon, live leases, alarms. */
export async function opsOverview(s: OverviewSources, query: OverviewQuery): Promise<OpsOverview> {
  const sf = s.snowflake?.();
  const all = s.entities.list();
  const search = query.search;
  const matching = search ? all.filter((a) => a.key.includes(search)) : all;
  const entities = busiestEntities(s, matching, query.limit);
  return {
    at: new Date(s.clock.now()).toISOString(),
    entityCount: all.length,
    matching: matching.length,
    entities,
    snowflake: sf ? { timeExhaustedAt: isoDate(sf.timeExhaustedAt), jsSafeLimitAt: isoDate(sf.jsSafeLimitAt) } : null,
    sampling: s.sampler.health(),
    // Live leases only: the worker table has a row per id of the range (up to 1023).
    workers: s.workers ? (await s.workers.list()).filter((w) => (w as { live?: unknown }).live !== false) : [],
    // Alarms live in each process (ops/alarms.ts): the list says whose it is.
    alarms: { instance: s.alarms.instance, active: s.alarms.activeAlarms().length, recent: s.alarms.recent() },
  };
}

/** The `limit` busiest of `matching`, pooled and snowflake alike, busiest first, then by key. */
function busiestEntities(
  s: OverviewSources,
  matching: EntityConfig[],
  limit: number,
): (EntityOverview | SnowflakeEntityOverview)[] {
  const localRates = s.localRates();
  const takeRates = new Map<string, number>();
  for (const entity of matching)
    if (entity.mode !== 'snowflake') takeRates.set(entity.key, s.sampler.forecast(entity.key)?.takePerSecond ?? 0);
  const chosen = busiest(
    limit,
    matching.map((a) => a.key),
    localRates,
    takeRates,
  );
  // A page costs its rows, not every entity.
  const pooled = s.sampler.overview(matching.filter((a) => chosen.has(a.key) && a.mode !== 'snowflake'));
  const snowflakes: SnowflakeEntityOverview[] = matching
    .filter((a) => chosen.has(a.key) && a.mode === 'snowflake')
    .map((a) => ({
      key: a.key,
      mode: 'snowflake',
      takePerSecond: Math.round((localRates.get(a.key) ?? 0) * 100) / 100,
    }));
  return [...pooled, ...snowflakes].sort((a, b) => b.takePerSecond - a.takePerSecond || (a.key < b.key ? -1 : 1));
}
