// Each instance's heartbeat and the fleet view built from them all; no I/O (`fleet.ts` reads and writes).

/** One instance's heartbeat, as published (JSON in the fleet hash). */
export interface Heartbeat {
  /** `host:pid`: the name its alarms carry too. */
  readonly id: string;
  /** `host:port` it listens on. */
  readonly address: string;
  readonly version: string;
  /** `process.version`. */
  readonly node: string;
  /** ISO time the process started. */
  readonly startedAt: string;
  /** The snowflake worker id it holds, or null (none leased, or not held now). */
  readonly workerId: number | null;
  /** The Redis epoch its connection sees (`run_id:master_replid`), or null when it could not read it. */
  readonly epoch: string | null;
  /** `mysql`, `postgres` or `sqlite`. */
  readonly dialect: string;
  /** The Redis function library it calls (`idpool_<hash>`), null without Redis; absent from older releases. */
  readonly library?: string | null;
  /** Its clock minus Redis's and the database's (ms; null: not read), as it last checked them; absent from older releases. */
  readonly clockSkewMs?: Readonly<Record<string, number | null>>;
  /** ISO time of its last ops sample, or null before the first. */
  readonly lastSampleAt: string | null;
  /** Alarm conditions on at this instance. */
  readonly activeAlarms: number;
  /** Unix ms (its clock) it was published at. */
  readonly at: number;
  /** Gone when not renewed within this many ms of `at`. */
  readonly ttlMs: number;
}

/** Ids per second an instance served recently, per entity: published beside its heartbeat. */
export type EntityRates = Readonly<Record<string, number>>;

/**
 * Rates published per heartbeat: the busiest only, ~16 kB (~32 bytes an entity) whatever the entity
 * count (the dashboard shows 50), in a hash of their own so the heartbeats read every second stay small.
 */
export const MAX_PUBLISHED_RATES = 500;

/** A gone instance stays listed this many TTLs (5 min at the default 10 s): long enough to be seen going. */
export const GONE_KEPT_TTLS = 30;

export type InstanceState = 'alive' | 'gone';

/** An instance as `GET /admin/instances` lists it. */
export interface InstanceView extends Omit<Heartbeat, 'at'> {
  readonly state: InstanceState;
  /** ISO time of its last heartbeat. */
  readonly heartbeatAt: string;
  readonly heartbeatAgeSeconds: number;
  /** The instance answering. */
  readonly self: boolean;
  /** What it differs from most alive instances on (epoch, version). */
  readonly disagrees: readonly ('epoch' | 'version')[];
}

/** The fleet as one instance sees it. */
export interface FleetInstances {
  readonly at: string;
  /** `redis`: every instance's heartbeat; `local`: Redis did not answer, this instance only (`note` says why). */
  readonly source: 'redis' | 'local';
  readonly note?: string;
  readonly alive: number;
  readonly gone: number;
  /** Alive instances see more than one epoch / run more than one version. */
  readonly disagreement: { readonly epoch: boolean; readonly version: boolean };
  readonly instances: readonly InstanceView[];
}

/** Heartbeats split into what to list and what to drop (gone for over {@link GONE_KEPT_TTLS} TTLs). */
export function fleetView(
  heartbeats: readonly Heartbeat[],
  now: number,
  selfId: string,
): { view: Omit<FleetInstances, 'source' | 'note'>; drop: string[] } {
  const drop: string[] = [];
  const listed: { hb: Heartbeat; state: InstanceState }[] = [];
  for (const hb of heartbeats) {
    const age = now - hb.at;
    if (age > hb.ttlMs * GONE_KEPT_TTLS) drop.push(hb.id);
    else listed.push({ hb, state: age > hb.ttlMs ? 'gone' : 'alive' });
  }
  const alive = listed.filter((i) => i.state === 'alive').map((i) => i.hb);
  // An epoch of null (not read) is no opinion, not a disagreement.
  const epochs = alive.map((hb) => hb.epoch).filter((e): e is string => e !== null);
  const usualEpoch = mostCommon(epochs);
  const usualVersion = mostCommon(alive.map((hb) => hb.version));
  const instances = listed
    .map(({ hb, state }): InstanceView => {
      const disagrees: ('epoch' | 'version')[] = [];
      // An alive instance's epoch and version are among those counted: the usual ones are set.
      if (state === 'alive' && hb.epoch !== null && hb.epoch !== usualEpoch) disagrees.push('epoch');
      if (state === 'alive' && hb.version !== usualVersion) disagrees.push('version');
      const { at, ...shown } = hb;
      return {
        ...shown,
        state,
        heartbeatAt: new Date(at).toISOString(),
        heartbeatAgeSeconds: Math.max(0, Math.round((now - at) / 100) / 10),
        self: hb.id === selfId,
        disagrees,
      };
    })
    .sort((a, b) => (a.state === b.state ? (a.id < b.id ? -1 : 1) : a.state === 'alive' ? -1 : 1));
  return {
    view: {
      at: new Date(now).toISOString(),
      alive: alive.length,
      gone: listed.length - alive.length,
      disagreement: { epoch: new Set(epochs).size > 1, version: new Set(alive.map((hb) => hb.version)).size > 1 },
      instances,
    },
    drop,
  };
}

/** Ids per second per entity, summed over `rates` of the instances named in `alive`. */
export function fleetRates(rates: ReadonlyMap<string, EntityRates>, alive: ReadonlySet<string>): Map<string, number> {
  const sum = new Map<string, number>();
  for (const [id, perEntity] of rates) {
    if (!alive.has(id)) continue;
    for (const [entity, rate] of Object.entries(perEntity))
      if (typeof rate === 'number' && Number.isFinite(rate)) sum.set(entity, (sum.get(entity) ?? 0) + rate);
  }
  return sum;
}

/** The busiest {@link MAX_PUBLISHED_RATES} of `rates`, as a heartbeat carries them (two decimals: a rate, not a count). */
export function publishedRates(rates: ReadonlyMap<string, number>): Record<string, number> {
  const busiest = [...rates].filter(([, r]) => r > 0).sort((a, b) => b[1] - a[1]);
  return Object.fromEntries(busiest.slice(0, MAX_PUBLISHED_RATES).map(([k, r]) => [k, Math.round(r * 100) / 100]));
}

/** A heartbeat read back from Redis, its known fields only, or undefined when it is not one (another version's, or damaged). */
export function parseHeartbeat(json: string): Heartbeat | undefined {
  const hb = parseObject(json) as Record<keyof Heartbeat, unknown> | undefined;
  if (!hb) return undefined;
  const text = (x: unknown) => (typeof x === 'string' ? x : undefined);
  if (typeof hb.id !== 'string' || typeof hb.version !== 'string') return undefined;
  if (typeof hb.at !== 'number' || typeof hb.ttlMs !== 'number' || !(hb.ttlMs > 0)) return undefined;
  return {
    id: hb.id,
    address: text(hb.address) ?? '',
    version: hb.version,
    node: text(hb.node) ?? '',
    startedAt: text(hb.startedAt) ?? new Date(hb.at).toISOString(),
    workerId: typeof hb.workerId === 'number' ? hb.workerId : null,
    epoch: text(hb.epoch) ?? null,
    dialect: text(hb.dialect) ?? '',
    lastSampleAt: text(hb.lastSampleAt) ?? null,
    activeAlarms: typeof hb.activeAlarms === 'number' ? hb.activeAlarms : 0,
    // Absent (not null) from the heartbeats of releases before versioned libraries and clock checks.
    ...(hb.library === null || typeof hb.library === 'string' ? { library: hb.library } : {}),
    ...(typeof hb.clockSkewMs === 'object' && hb.clockSkewMs !== null ? { clockSkewMs: skews(hb.clockSkewMs) } : {}),
    at: hb.at,
    ttlMs: hb.ttlMs,
  };
}

/** A heartbeat's clock skews: a number or null per reference, anything else dropped. */
function skews(v: object): Record<string, number | null> {
  return Object.fromEntries(
    Object.entries(v).filter(([, ms]) => ms === null || typeof ms === 'number') as [string, number | null][],
  );
}

/** Rates read back from Redis, or undefined when they are not an object. */
export function parseRates(json: string): EntityRates | undefined {
  const v = parseObject(json);
  return Array.isArray(v) ? undefined : (v as EntityRates | undefined);
}

/** JSON read back from Redis that is an object (an array too), or undefined when it is not (another version's, or damaged). */
export function parseObject(json: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(json);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The value most of `values` have (ties: the smallest, so every instance picks the same), or undefined for none. */
function mostCommon(values: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: { value: string; count: number } | undefined;
  for (const [value, count] of counts)
    if (!best || count > best.count || (count === best.count && value < best.value)) best = { value, count };
  return best?.value;
}

/** An alarm record as the fleet stream holds it: the record's own fields, and the instance that raised it. */
export interface FleetAlarm {
  readonly instance: string;
  readonly record: Record<string, unknown>;
}

/** Alarms kept (the dashboard shows 100): a burst of one per entity over a few hundred still leaves the last minutes readable. */
export const ALARM_STREAM_LENGTH = 1000;

/** What the fleet keeps in Redis: the alarm stream and the heartbeats (a fake or another store can stand in). */
export interface FleetStore {
  /** `redis`: shared by every instance on it; `memory`: this process alone (embedded). */
  readonly kind: 'redis' | 'memory';
  appendAlarm(alarm: FleetAlarm): Promise<void>;
  /** The newest `count` alarms, newest first. */
  recentAlarms(count: number): Promise<FleetAlarm[]>;
  /** This instance's heartbeat and its recent take rates. */
  publish(heartbeat: Heartbeat, rates: EntityRates): Promise<void>;
  heartbeats(): Promise<Heartbeat[]>;
  /** Every instance's last published rates, by instance id. */
  rates(): Promise<Map<string, EntityRates>>;
  drop(ids: readonly string[]): Promise<void>;
}
