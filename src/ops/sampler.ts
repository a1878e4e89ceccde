import type { EntityConfig } from '../entities/entity';
import type { PoolSizing } from '../pool/demand';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { type Periodic, every } from '../schedule';
import type { Alarms } from './alarms';
import { type EntityForecast, JS_SAFE_LIMIT, type PoolSample, Ring, forecastEntity, ratesOf } from './forecast';
import type { OpsMetrics } from './metrics';

/** This instance's worker lease as the ops side sees it (snowflake mode). */
export interface LeaseView {
  status(): { workerId: number | undefined; held: boolean; expiresAt?: number };
  /** Worker ids of this deployment's range, and how many have a live lease. */
  usage?(): Promise<{ inUse: number; total: number }>;
}

/** When the service-wide snowflake layout runs out, in Unix ms (undefined = never). */
export interface SnowflakeForecast {
  timeExhaustedAt: number;
  jsSafeLimitAt: number | undefined;
}

/**
 * Entities one sampling run reads: one pipeline of 1,000 LLEN and one SQL
 * query for 1,000 offsets, a few ms. Beyond that many entities each is
 * sampled every `entities / 1000` runs, so the cost per second stays the
 * same however many entities exist.
 */
const SAMPLE_BATCH = 1000;

export interface SamplerOptions {
  apps: { list(): EntityConfig[] };
  pools: { sizes(keys: readonly string[]): Promise<number[]> };
  /** Target depths and watermarks (they move with demand). */
  sizing: PoolSizing;
  offsets: { peekMany(entityKeys: readonly string[]): Promise<Map<string, bigint>> };
  /** Ids this instance has served per entity so far. */
  served?: (entityKey: string) => number;
  cluster: { toId(n: bigint): bigint; readonly count: number };
  metrics: OpsMetrics;
  alarms: Alarms;
  clock: Clock;
  log: Logger;
  /** Read when first needed: the snowflake layout is built after the pool side. */
  snowflake?: () => SnowflakeForecast | undefined;
  lease?: LeaseView;
  /** Sampling period (IDPOOL_OPS_SAMPLE_MS). */
  sampleMs: number;
  /** Rates behind forecasts are averaged over this long. */
  rateWindowMs: number;
  /** Chart rates are averaged over this long (short: the chart should move). */
  chartRateWindowMs: number;
  /** History kept for the dashboard charts. */
  historyMs: number;
  /** Forecasts due within this many seconds raise an alarm (IDPOOL_ALERT_HORIZON_DAYS). */
  horizonSeconds: number;
  /** `forecast_pool_dry` below this many seconds. */
  poolDrySeconds: number;
  /** `pool_low` when a pool stays below this percent of its low watermark. */
  poolLowPercent: number;
  /** `worker_range_nearly_full` at or above this percent of the range in use. */
  workerRangePercent: number;
}

export interface ChartPoint {
  /** Unix ms. */
  t: number;
  size: number;
  takePerSecond: number;
}

export interface EntityOverview {
  key: string;
  mode: EntityConfig['mode'];
  pool: { size: number; target: number; max: number; lowWatermark: number; fillPercent: number };
  currentOffset: string;
  highestId: string | null;
  takePerSecond: number;
  reservePerSecond: number;
  forecast: { poolDrySeconds: number | null; jsSafeLimitSeconds: number | null; int63LimitSeconds: number | null };
  history: ChartPoint[];
}

/** Conditions must hold this many samples in a row before they alarm (a fresh pool is empty for one). */
const CONFIRM_SAMPLES = 2;
const USAGE_EVERY_MS = 10_000;

/**
 * Every `sampleMs`: reads all pool sizes (one Redis round trip) and all
 * offsets (one SQL query), keeps a short history, sets the pool and forecast
 * gauges and turns conditions into alarms. Costs two round trips however
 * many requests arrive; nothing here is on the request path.
 */
export class OpsSampler {
  private readonly samples = new Map<string, Ring<PoolSample>>();
  private readonly charts = new Map<string, Ring<ChartPoint>>();
  private readonly forecasts = new Map<string, EntityForecast>();
  private readonly streaks = new Map<string, number>();
  /** Entities whose pool has reached its low watermark once: before that, an empty pool is just new. */
  private readonly filledOnce = new Set<string>();
  private readonly schedule: Periodic;
  private lastErrorAt = 0;

  private lastUsageAt = Number.NEGATIVE_INFINITY;
  /** Where the next run's batch starts in the list of entities. */
  private cursor = 0;

  constructor(private readonly o: SamplerOptions) {
    this.schedule = every('ops-sample', o.sampleMs, () => this.sampleOnce());
  }

  /** Samples now and then every `sampleMs`. */
  start(): void {
    this.schedule.start();
    void this.schedule.runNow();
  }

  stop(): Promise<void> {
    return this.schedule.stop();
  }

  /** One sampling run; errors are logged (at most once a minute) and never thrown. */
  async sampleOnce(): Promise<void> {
    try {
      await this.sampleEntities();
      await this.sampleLease();
      this.checkSnowflake();
    } catch (err) {
      const now = this.o.clock.now();
      if (now - this.lastErrorAt > 60_000) {
        this.lastErrorAt = now;
        this.o.log.warn({ err: String((err as Error)?.message ?? err) }, 'ops sampling failed');
      }
    }
  }

  /** The next SAMPLE_BATCH segment entities, going round, and how many runs a full round takes. */
  private nextBatch(): { apps: EntityConfig[]; live: Set<string>; rounds: number } {
    const all = this.o.apps.list().filter((a) => a.mode !== 'snowflake');
    const live = new Set(all.map((a) => a.key));
    if (all.length <= SAMPLE_BATCH) return { apps: all, live, rounds: 1 };
    if (this.cursor >= all.length) this.cursor = 0;
    const apps = all.slice(this.cursor, this.cursor + SAMPLE_BATCH);
    this.cursor += SAMPLE_BATCH;
    return { apps, live, rounds: Math.ceil(all.length / SAMPLE_BATCH) };
  }

  private async sampleEntities(): Promise<void> {
    const { apps, live, rounds } = this.nextBatch();
    const keys = apps.map((a) => a.key);
    const [offsets, sizes] = await Promise.all([this.o.offsets.peekMany(keys), this.o.pools.sizes(keys)]);
    const at = this.o.clock.now();
    // History covers historyMs whatever the round: an entity sampled every
    // `rounds` runs keeps that many fewer samples.
    const capacity = Math.max(2, Math.ceil(this.o.historyMs / (this.o.sampleMs * rounds)) + 1);
    apps.forEach((app, i) => {
      const offset = offsets.get(app.key);
      if (offset === undefined) return;
      const f = this.record(app, { at, size: sizes[i], offset }, capacity);
      if (!f) return;
      this.publish(app, sizes[i], offset, f);
      this.check(app, sizes[i], at, f);
    });
    for (const key of [...this.samples.keys()]) if (!live.has(key)) this.forget(key);
  }

  /** Adds a sample to the entity's history and chart; returns its forecast once there is one. */
  private record(app: EntityConfig, sample: { at: number; size: number; offset: bigint }, capacity: number): EntityForecast | undefined {
    const { cluster } = this.o;
    let ring = this.samples.get(app.key);
    // Until the pool first reaches its watermark, keep only the latest
    // sample: the first fill reserves a whole pool and pushes it over many
    // script calls, and a sample taken mid-push would read as a huge take
    // rate. Rates start from the first filled sample.
    if (!ring || !this.filledOnce.has(app.key)) this.samples.set(app.key, (ring = new Ring(capacity)));
    if (sample.size >= this.o.sizing.lowWatermark(app)) this.filledOnce.add(app.key);
    ring.push({ ...sample, served: this.o.served?.(app.key) });
    const history = ring.toArray();
    const f = forecastEntity(history, this.o.rateWindowMs, app.startOffset, (n) => cluster.toId(n), cluster.count);
    if (!f) return undefined;
    this.forecasts.set(app.key, f);
    let chart = this.charts.get(app.key);
    if (!chart) this.charts.set(app.key, (chart = new Ring(capacity)));
    chart.push({ t: sample.at, size: sample.size, takePerSecond: round(ratesOf(history, this.o.chartRateWindowMs).takePerSecond) });
    return f;
  }

  /** Sets the entity's pool and forecast gauges. */
  private publish(app: EntityConfig, size: number, offset: bigint, f: EntityForecast): void {
    const { metrics } = this.o;
    const entity = app.key;
    metrics.poolSize.set({ entity }, size);
    metrics.poolLowWatermark.set({ entity }, this.o.sizing.lowWatermark(app));
    metrics.poolTarget.set({ entity }, this.o.sizing.target(app));
    metrics.poolMax.set({ entity }, app.maxPoolSize);
    metrics.currentOffset.set({ entity }, Number(offset));
    metrics.takeRate.set({ entity }, f.takePerSecond);
    metrics.reserveRate.set({ entity }, f.reservePerSecond);
    metrics.forecastPoolDry.set({ entity }, f.poolDrySeconds);
    metrics.forecastJsSafe.set({ entity }, f.jsSafeSeconds);
    metrics.forecastInt63.set({ entity }, f.int63Seconds);
  }

  /** Raises or clears the entity's pool and forecast alarms. */
  private check(app: EntityConfig, size: number, at: number, f: EntityForecast): void {
    const entity = app.key;
    const watermark = this.o.sizing.lowWatermark(app);
    const horizonDays = round(this.o.horizonSeconds / 86_400);
    const serving = this.filledOnce.has(entity);
    this.condition(serving && size < (watermark * this.o.poolLowPercent) / 100, {
      name: 'pool_low',
      severity: 'warning',
      entityKey: entity,
      message: `pool of ${entity} is below ${this.o.poolLowPercent}% of its low watermark: the refiller is not keeping up`,
      details: { size, lowWatermark: watermark, max: app.maxPoolSize },
    });
    // Only below the watermark: a pool at its target is as deep as demand
    // calls for (a small one right after demand starts is topped up at the
    // watermark); below it, the refiller should already have acted.
    this.condition(serving && size < watermark && f.poolDrySeconds < this.o.poolDrySeconds, {
      name: 'forecast_pool_dry',
      severity: 'warning',
      entityKey: entity,
      message: `pool of ${entity} is below its low watermark and runs dry in ${round(f.poolDrySeconds)} s at the current take rate without refills`,
      details: { seconds: round(f.poolDrySeconds), size, takePerSecond: round(f.takePerSecond) },
    });
    // Only for entities that started below 2^53: their consumers may hold ids in JS numbers.
    this.condition(serving && this.o.cluster.toId(app.startOffset) < JS_SAFE_LIMIT && f.jsSafeSeconds <= this.o.horizonSeconds, {
      name: 'forecast_js_safe_limit',
      severity: 'warning',
      entityKey: entity,
      message: `ids of ${entity} pass 2^53 (unsafe as JavaScript numbers) ${f.jsSafeSeconds === 0 ? 'now' : `in ${describeSeconds(f.jsSafeSeconds)}`} (horizon ${horizonDays} days)`,
      details: { seconds: round(f.jsSafeSeconds), at: dateIn(at, f.jsSafeSeconds), highestId: f.highestId.toString(), takePerSecond: round(f.takePerSecond) },
    });
    this.condition(serving && f.int63Seconds <= this.o.horizonSeconds, {
      name: 'forecast_int63_limit',
      severity: 'critical',
      entityKey: entity,
      message: `ids of ${entity} reach the end of the 63-bit number line ${f.int63Seconds === 0 ? 'now' : `in ${describeSeconds(f.int63Seconds)}`} (horizon ${horizonDays} days)`,
      details: { seconds: round(f.int63Seconds), at: dateIn(at, f.int63Seconds), highestId: f.highestId.toString(), takePerSecond: round(f.takePerSecond) },
    });
  }

  /** Drops a retired entity's history, gauges and alarms. */
  private forget(key: string): void {
    this.samples.delete(key);
    this.charts.delete(key);
    this.forecasts.delete(key);
    this.filledOnce.delete(key);
    this.o.metrics.forgetEntity(key);
    for (const name of ['pool_low', 'forecast_pool_dry', 'forecast_js_safe_limit', 'forecast_int63_limit'] as const) {
      this.streaks.delete(`${name}\u0000${key}`);
      this.o.alarms.clear(name, key);
    }
  }

  private async sampleLease(): Promise<void> {
    const lease = this.o.lease;
    if (!lease) return;
    const { metrics, alarms } = this.o;
    const status = lease.status();
    const now = this.o.clock.now();
    metrics.leaseHeld.set(status.held ? 1 : 0);
    metrics.leaseWorkerId.set(status.workerId ?? -1);
    metrics.leaseRemaining.set(status.held && status.expiresAt !== undefined ? Math.max(0, (status.expiresAt - now) / 1000) : 0);
    this.condition(!status.held, {
      name: 'lease_lost',
      severity: 'critical',
      message: 'this instance holds no usable worker lease: it issues no snowflake ids',
      details: { workerId: status.workerId ?? null },
    }, 1);
    // Usage reads every worker row: every 10 s is plenty for a range that fills over hours.
    if (lease.usage && now - this.lastUsageAt >= USAGE_EVERY_MS) {
      this.lastUsageAt = now;
      const { inUse, total } = await lease.usage();
      metrics.workersInUse.set(inUse);
      metrics.workersAvailable.set(total);
      this.condition(total > 0 && (inUse * 100) / total >= this.o.workerRangePercent, {
        name: 'worker_range_nearly_full',
        severity: 'warning',
        message: `${inUse} of ${total} worker ids are leased: new instances may find none free`,
        details: { inUse, total, percent: round((inUse * 100) / total) },
      }, 1);
    }
  }

  private checkSnowflake(): void {
    const sf = this.o.snowflake?.();
    if (!sf) return;
    this.o.metrics.snowflakeTimeExhausted.set(sf.timeExhaustedAt / 1000);
    this.o.metrics.snowflakeJsSafe.set(sf.jsSafeLimitAt === undefined ? Number.POSITIVE_INFINITY : sf.jsSafeLimitAt / 1000);
    const now = this.o.clock.now();
    const horizonMs = this.o.horizonSeconds * 1000;
    this.condition(sf.timeExhaustedAt - now <= horizonMs, {
      name: 'forecast_snowflake_time_exhausted',
      severity: 'critical',
      message: `the snowflake layout runs out of timestamp bits on ${new Date(sf.timeExhaustedAt).toISOString()}`,
      details: { at: new Date(sf.timeExhaustedAt).toISOString() },
    }, 1);
    const js = sf.jsSafeLimitAt;
    this.condition(js !== undefined && js > now && js - now <= horizonMs, {
      name: 'forecast_snowflake_js_safe_limit',
      severity: 'warning',
      message: `snowflake ids pass 2^53 (unsafe as JavaScript numbers) on ${js === undefined ? '' : new Date(js).toISOString()}`,
      details: { at: js === undefined ? null : new Date(js).toISOString() },
    }, 1);
  }

  /** Sets or clears a condition alarm once it has held `confirm` samples in a row. */
  private condition(holds: boolean, alarm: Parameters<Alarms['set']>[0], confirm = CONFIRM_SAMPLES): void {
    const key = `${alarm.name}\u0000${alarm.entityKey ?? ''}`;
    if (!holds) {
      this.streaks.delete(key);
      this.o.alarms.clear(alarm.name, alarm.entityKey);
      return;
    }
    const streak = (this.streaks.get(key) ?? 0) + 1;
    this.streaks.set(key, streak);
    if (streak >= confirm) this.o.alarms.set(alarm);
  }

  /** Pool, rates, forecasts and chart history of the given entities (the dashboard's page; default all). */
  overview(entities: readonly EntityConfig[] = this.o.apps.list()): EntityOverview[] {
    const out: EntityOverview[] = [];
    for (const app of entities) {
      if (app.mode === 'snowflake') continue;
      const last = this.samples.get(app.key)?.toArray().at(-1);
      const f = this.forecasts.get(app.key);
      const watermark = this.o.sizing.lowWatermark(app);
      out.push({
        key: app.key,
        mode: app.mode,
        pool: { size: last?.size ?? 0, target: this.o.sizing.target(app), max: app.maxPoolSize, lowWatermark: watermark, fillPercent: last ? round((last.size * 100) / app.maxPoolSize) : 0 },
        currentOffset: (last?.offset ?? app.startOffset).toString(),
        highestId: f && f.highestId >= 0n ? f.highestId.toString() : null,
        takePerSecond: round(f?.takePerSecond ?? 0),
        reservePerSecond: round(f?.reservePerSecond ?? 0),
        forecast: {
          poolDrySeconds: finite(f?.poolDrySeconds),
          jsSafeLimitSeconds: finite(f?.jsSafeSeconds),
          int63LimitSeconds: finite(f?.int63Seconds),
        },
        history: [...(this.charts.get(app.key)?.toArray() ?? [])],
      });
    }
    return out;
  }

  /** The latest forecast of one entity (tests, CLI). */
  forecast(entityKey: string): EntityForecast | undefined {
    return this.forecasts.get(entityKey);
  }
}

function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 100) / 100 : n;
}

/** JSON has no Infinity: "never" is null. */
function finite(n: number | undefined): number | null {
  return n === undefined || !Number.isFinite(n) ? null : round(n);
}

function dateIn(now: number, seconds: number): string | null {
  return Number.isFinite(seconds) ? new Date(now + seconds * 1000).toISOString() : null;
}

export function describeSeconds(s: number): string {
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} days`;
}
