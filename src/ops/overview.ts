import type { EntityConfig } from '../entities/entity';
import type { Fleet } from '../fleet/fleet';
import type { FleetInstances } from '../fleet/instances';
import { type AlarmRecord, type Alarms, RECENT_ALARMS } from './alarms';
import { busiest } from './busiest';
import type { EntityOverview } from './dashboard-rows';
import { isoDate, round } from './format';
import type { OpsSampler, SamplerOptions } from './sampler';

/** A snowflake entity on the dashboard: no pool, only how fast the fleet (or this instance: `rates`) serves it. */
export interface SnowflakeEntityOverview {
  key: string;
  mode: 'snowflake';
  takePerSecond: number;
}

/** An alarm record with the instance that raised it. */
export type FleetAlarmRecord = AlarmRecord & { instance: string };

/** Which entities `GET /admin/ops` shows: the busiest `limit`, of those whose key contains `search` when given. */
export interface OverviewQuery {
  limit: number;
  search?: string;
}

/** Everything the dashboard shows (`GET /admin/ops`; each field described in the OpenAPI `OpsOverview`). */
export interface OpsOverview {
  at: string;
  entityCount: number;
  matching: number;
  entities: (EntityOverview | SnowflakeEntityOverview)[];
  snowflake: { timeExhaustedAt: string | null; jsSafeLimitAt: string | null; region?: number } | null;
  sampling: ReturnType<OpsSampler['health']>;
  workers: unknown[];
  alarms: { scope: 'fleet' | 'instance'; note?: string; instance: string; active: number; recent: FleetAlarmRecord[] };
  rates: { scope: 'fleet' | 'instance'; instances: number; note?: string };
  instances: FleetInstances;
}

/** What the overview reads: the registry, the sampler's forecasts, this instance's recent served rates, alarms. */
export interface OverviewSources extends Pick<SamplerOptions, 'clock' | 'entities' | 'snowflake'> {
  sampler: Pick<OpsSampler, 'overview' | 'health'>;
  /** Each sampled entity's take rate (`idpool_take_rate_ids_per_second`). */
  takeRates: Map<string, number>;
  /** Ids per second each entity was recently served by this instance. */
  localRates(): Map<string, number>;
  alarms: Pick<Alarms, 'activeAlarms' | 'recent' | 'instance'>;
  fleet: Pick<Fleet, 'alarms' | 'instances' | 'rates'>;
  /** Whether alarms are shared through the fleet (Redis); embedded mode shows its own ring. */
  sharedAlarms: boolean;
  workers?: { list(): Promise<unknown[]> };
}

/** The dashboard's document (`GET /admin/ops`): the busiest matching entities, the snowflake horizon, live leases, alarms. */
export async function opsOverview(s: OverviewSources, query: OverviewQuery): Promise<OpsOverview> {
  const sf = s.snowflake?.();
  const all = s.entities.list();
  const search = query.search;
  const matching = search ? all.filter((a) => a.key.includes(search)) : all;
  // Both reads are bounded (fleet/fleet.ts) and fall back to this instance: a page never waits on Redis for long.
  const [instances, alarms] = await Promise.all([s.fleet.instances(), recentAlarms(s)]);
  const fleetRates = await s.fleet.rates(instances);
  const rates: OpsOverview['rates'] = fleetRates
    ? { scope: 'fleet', instances: fleetRates.instances }
    : { scope: 'instance', instances: 1, note: 'the fleet could not be read: take rates of this instance only' };
  const entities = busiestEntities(s, matching, query.limit, fleetRates?.rates ?? s.localRates());
  // Conditions on now: each alive instance's count as of its heartbeat, this instance's as of now.
  const active =
    alarms.scope === 'fleet'
      ? instances.instances
          .filter((i) => i.state === 'alive' && !i.self)
          .reduce((sum, i) => sum + i.activeAlarms, s.alarms.activeAlarms().length)
      : s.alarms.activeAlarms().length;
  return {
    at: new Date(s.clock.now()).toISOString(),
    entityCount: all.length,
    matching: matching.length,
    entities,
    snowflake: sf
      ? {
          timeExhaustedAt: isoDate(sf.timeExhaustedAt),
          jsSafeLimitAt: isoDate(sf.jsSafeLimitAt),
          ...(sf.region === undefined ? {} : { region: sf.region }),
        }
      : null,
    sampling: s.sampler.health(),
    // Live leases only: the worker table has a row per id of the range (up to 1023).
    workers: s.workers ? (await s.workers.list()).filter((w) => (w as { live?: unknown }).live !== false) : [],
    alarms: { ...alarms, instance: s.alarms.instance, active },
    rates,
    instances,
  };
}

/** The fleet's recent alarms from Redis, or this instance's ring (embedded; Redis not answering, with a note). */
async function recentAlarms(s: OverviewSources): Promise<Pick<OpsOverview['alarms'], 'scope' | 'note' | 'recent'>> {
  const own = () => s.alarms.recent().map((record) => ({ instance: s.alarms.instance, record: { ...record } }));
  const read = s.sharedAlarms ? await s.fleet.alarms(RECENT_ALARMS, own) : { source: 'local' as const, recent: own() };
  const recent = read.recent.map((a) => ({ ...(a.record as AlarmRecord), instance: a.instance }));
  if (read.source === 'redis') return { scope: 'fleet', recent };
  return { scope: 'instance', ...('note' in read && { note: read.note }), recent };
}

/** The `limit` busiest of `matching`, pooled and snowflake alike, busiest first, then by key. */
function busiestEntities(
  s: OverviewSources,
  matching: EntityConfig[],
  limit: number,
  servedRates: Map<string, number>,
): (EntityOverview | SnowflakeEntityOverview)[] {
  const keys = matching.map((a) => a.key);
  const chosen = busiest(limit, keys, servedRates, s.takeRates);
  const shown = matching.filter((a) => chosen.has(a.key));
  const served = (key: string) => round(servedRates.get(key) ?? 0);
  // A page costs its rows, not every entity. A pool's rate is read from the pool (every consumer, direct pops
  // too), but over a longer window: never shown below what the instances served.
  const pooled = s.sampler
    .overview(shown.filter((a) => a.mode !== 'snowflake'))
    .map((row) => ({ ...row, takePerSecond: Math.max(row.takePerSecond, served(row.key)) }));
  const snowflakes = shown
    .filter((a) => a.mode === 'snowflake')
    .map((a): SnowflakeEntityOverview => ({ key: a.key, mode: 'snowflake', takePerSecond: served(a.key) }));
  return [...pooled, ...snowflakes].sort((a, b) => b.takePerSecond - a.takePerSecond || (a.key < b.key ? -1 : 1));
}
