import type { EntityConfig } from '../entities/entity';
import type { Demand } from '../pool/demand';
import type { IdStride } from '../segment/stride';
import { type EntityForecast, type PoolSample, Ring, forecastEntity, ratesOf } from './forecast';
import { round } from './format';
import type { NumberUsage } from '../pool/period-pools';
import type { OpsConfig } from './settings';

/** One point of an entity's dashboard charts. */
export interface ChartPoint {
  /** Unix ms. */
  t: number;
  size: number;
  takePerSecond: number;
}

/** A sample as read: what this instance served so far is added when it is kept. */
type Reading = Omit<PoolSample, 'served'>;

/** What the history reads; chart rates are over five samples (5 s at least), so one refill does not jump. */
export interface EntityHistoryOptions extends Pick<OpsConfig, 'rateWindowMs' | 'sampleMs'> {
  /** Low watermarks: an entity's history starts once its pool first reached its own. */
  demand: Pick<Demand, 'lowWatermark'>;
  /** The deployment's stride; `of(entity)` adds the entity's spacing. */
  stride: Pick<IdStride, 'of'>;
  /** Ids this instance has served per entity so far. */
  served?: (entityKey: string) => number;
  /** Takes this instance refused per entity so far for too few ids ready (pool short, or its refill failing). */
  refused?: (entityKey: string) => number;
}

/** What the sampler remembers of each entity between runs: recent samples, the dashboard chart, the latest forecast. */
export class EntityHistory {
  private readonly samples = new Map<string, Ring<PoolSample>>();
  private readonly charts = new Map<string, Ring<ChartPoint>>();
  private readonly forecasts = new Map<string, EntityForecast>();
  /** Entities whose pool has reached its low watermark once: before that, an empty pool is just new. */
  private readonly filledOnce = new Set<string>();
  /** Per entity: the takes refused so far, and when that count last grew. */
  private readonly refusals = new Map<string, { count: number; at: number }>();

  constructor(private readonly options: EntityHistoryOptions) {}

  /** Entities with a history (those sampled since they were last forgotten). */
  keys(): string[] {
    return [...this.samples.keys()];
  }

  lastSample(entityKey: string): PoolSample | undefined {
    return this.samples.get(entityKey)?.toArray().at(-1);
  }

  forecast(entityKey: string): EntityForecast | undefined {
    return this.forecasts.get(entityKey);
  }

  chart(entityKey: string): readonly ChartPoint[] {
    return this.charts.get(entityKey)?.toArray() ?? [];
  }

  /** Whether the entity's pool has reached its low watermark since it was first sampled. */
  filled(entityKey: string): boolean {
    return this.filledOnce.has(entityKey);
  }

  /** Adds a sample to the entity's history and chart; returns its forecast once there is one. */
  record(entity: EntityConfig, sample: Reading, capacity: number): EntityForecast | undefined {
    const { stride } = this.options;
    // Until the pool first reaches its watermark keep only the latest sample: a sample in the middle of the
    // first fill's many pushes would read as a huge take rate.
    const history = this.push(entity.key, sample, capacity, !this.filledOnce.has(entity.key));
    if (sample.size >= this.options.demand.lowWatermark(entity)) this.filledOnce.add(entity.key);
    const spaced = stride.of(entity);
    let f = forecastEntity(history, this.options.rateWindowMs, entity.startOffset, (n) => spaced.toId(n), spaced.count);
    if (!f) return undefined;
    // Refused takes take nothing, so a pool too short for its requests would forecast "never": it is dry now.
    if (this.refusedRecently(entity.key, sample.at)) f = { ...f, poolDrySeconds: 0 };
    this.forecasts.set(entity.key, f);
    this.chartPoint(entity.key, history, capacity);
    return f;
  }

  /**
   * Adds a business-number reading (ready numbers as the pool, the period's use as the take counter); returns
   * its take rate over the rate window. A new period, or a use that fell (a restored Redis), starts anew.
   */
  recordNumbers(entityKey: string, usage: NumberUsage, capacity: number): number {
    const last = this.lastSample(entityKey);
    const taken = Number(usage.used);
    const period = usage.period.id;
    const restart = last?.period !== period || taken < (last.taken ?? 0);
    const sample = { at: usage.now, size: usage.ready, offset: usage.used + BigInt(usage.ready), taken, period };
    const history = this.push(entityKey, sample, capacity, restart);
    this.chartPoint(entityKey, history, capacity);
    return ratesOf(history, this.options.rateWindowMs).takePerSecond;
  }

  private push(key: string, sample: Reading, capacity: number, restart: boolean): readonly PoolSample[] {
    const ring = Ring.in(this.samples, key, capacity, restart);
    ring.push({ ...sample, served: this.options.served?.(key) });
    return ring.toArray();
  }

  private chartPoint(key: string, history: readonly PoolSample[], capacity: number): void {
    const last = history[history.length - 1];
    Ring.in(this.charts, key, capacity).push({
      t: last.at,
      size: last.size,
      takePerSecond: round(ratesOf(history, Math.max(5000, this.options.sampleMs * 5)).takePerSecond),
    });
  }

  /**
   * Whether a sample of `size` and `offset` would change nothing (filled, read and served and refused as the last,
   * nothing moving): recording copies cost 2.9 % of a core in garbage at 100,000 idle entities.
   */
  atRest(entityKey: string, size: number, offset: bigint): boolean {
    const last = this.lastSample(entityKey);
    const f = this.forecasts.get(entityKey);
    if (!last || !f || !this.filledOnce.has(entityKey)) return false;
    if (f.takePerSecond !== 0 || f.reservePerSecond !== 0 || f.poolDrySeconds === 0) return false;
    const refused = this.options.refused?.(entityKey) ?? 0;
    return (
      last.size === size &&
      last.offset === offset &&
      (last.served ?? 0) === (this.options.served?.(entityKey) ?? 0) &&
      refused === (this.refusals.get(entityKey)?.count ?? 0)
    );
  }

  private refusedRecently(entityKey: string, at: number): boolean {
    const count = this.options.refused?.(entityKey) ?? 0;
    const last = this.refusals.get(entityKey) ?? { count: 0, at: Number.NEGATIVE_INFINITY };
    const now = count > last.count ? { count, at } : last;
    this.refusals.set(entityKey, now);
    return at - now.at < this.options.rateWindowMs;
  }

  /** Drops a retired entity's history. */
  forget(entityKey: string): void {
    this.samples.delete(entityKey);
    this.charts.delete(entityKey);
    this.forecasts.delete(entityKey);
    this.filledOnce.delete(entityKey);
    this.refusals.delete(entityKey);
  }
}
