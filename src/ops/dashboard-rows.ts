import type { EntityConfig } from '../entities/entity';
import type { Demand, PoolSizing } from '../pool/demand';
import type { ChartPoint, EntityHistory } from './entity-history';
import { finite, round } from './format';
import { numberPoolCap } from '../numbers/scheme';
import { type NumberPeriodJson, type NumberView, numberPeriodJson } from './period-forecast';

/** One segment entity's dashboard row (each field described in the OpenAPI `EntityOverview`). */
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
  sampledAt: number | null;
  stale: boolean;
  /** Business numbers: the pool is the ready numbers; offsets and 2^53 do not apply. */
  period?: NumberPeriodJson;
  gapless?: true;
}

/** What a dashboard row is built from: the sampler's view of one entity. */
export interface SampledView {
  demand: Pick<Demand, 'sizing'>;
  history: Pick<EntityHistory, 'lastSample' | 'forecast' | 'chart'>;
  numbers(entityKey: string): NumberView | undefined;
  /** Unix ms. */
  sampledAt(entityKey: string): number | undefined;
  isStale(entityKey: string, now: number): boolean;
}

/** One dashboard row per segment entity: pool, rates, forecasts and chart history. */
export function dashboardRows(entities: readonly EntityConfig[], view: SampledView, now: number): EntityOverview[] {
  return entities
    .filter((entity) => entity.mode !== 'snowflake')
    .map((entity) => {
      const numbers = entity.numbers && view.numbers(entity.key);
      return {
        key: entity.key,
        mode: entity.mode,
        ...(numbers ? numberFigures(entity, numbers, view) : poolFigures(entity, view)),
        history: [...view.history.chart(entity.key)],
        sampledAt: view.sampledAt(entity.key) ?? null,
        stale: view.isStale(entity.key, now),
        ...(numbers && { period: numberPeriodJson(numbers), ...(entity.gapless && { gapless: true as const }) }),
      };
    });
}

function poolFigures(entity: EntityConfig, view: SampledView) {
  const last = view.history.lastSample(entity.key);
  const f = view.history.forecast(entity.key);
  return {
    pool: pool(last?.size ?? 0, view.demand.sizing(entity)),
    currentOffset: (last?.offset ?? entity.startOffset).toString(),
    highestId: f && f.highestId >= 0n ? f.highestId.toString() : null,
    takePerSecond: round(f?.takePerSecond ?? 0),
    reservePerSecond: round(f?.reservePerSecond ?? 0),
    forecast: {
      poolDrySeconds: finite(f?.poolDrySeconds),
      jsSafeLimitSeconds: finite(f?.jsSafeSeconds),
      int63LimitSeconds: finite(f?.int63Seconds),
    },
  };
}

/** A business-number entity's period: its ready numbers as the pool, no offsets or 2^53 (`period` says the rest). */
function numberFigures(entity: EntityConfig, numbers: NumberView, view: SampledView) {
  const cap = entity.numbers && numberPoolCap(entity, entity.numbers);
  return {
    pool: pool(numbers.usage.ready, view.demand.sizing(entity, cap)),
    currentOffset: numbers.usage.used.toString(),
    highestId: null,
    takePerSecond: round(numbers.takePerSecond ?? 0),
    reservePerSecond: 0,
    forecast: { poolDrySeconds: null, jsSafeLimitSeconds: null, int63LimitSeconds: null },
  };
}

function pool(size: number, { target, max, lowWatermark }: PoolSizing): EntityOverview['pool'] {
  return { size, target, max, lowWatermark, fillPercent: target > 0 ? round((size * 100) / target) : 0 };
}
