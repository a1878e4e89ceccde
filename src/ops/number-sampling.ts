import type { EntityConfig } from '../entities/entity';
import { type TimeZone, timeZone } from '../numbers/zone';
import type { NumberUsage } from '../pool/number-takes';
import type { AlarmRules } from './alarm-rules';
import type { EntityHistory } from './entity-history';
import type { OpsMetrics } from './metrics';
import { type NumberView, PeriodHistory, numberView } from './period-forecast';

export type { NumberView } from './period-forecast';

/** Where the sampler reads a business-number entity's period: the numbers layer's `usage` (`NumberAdmin`, `pool/number-takes.ts`). */
export interface NumberUsageSource {
  usage(entity: EntityConfig): Promise<NumberUsage>;
}

export interface NumberSamplingOptions {
  metrics: OpsMetrics;
  /** Where the periods are read (none: no business-number entity is sampled). */
  numbers?: NumberUsageSource;
  /** The rate behind the forecast is taken over this long (IDPOOL_OPS_PERIOD_RATE_WINDOW_MS). */
  periodRateWindowMs: number;
}

/**
 * The business-number side of the ops sampler: each run reads now's period
 * of the business-number entities it is given (by the clock that decides
 * it), keeps the readings of that period over the rate window, sets one
 * series per entity of each gauge (the period's start and end, used,
 * capacity, the forecast: a new period moves the values, never adds a
 * series) and hands the forecast to the alarm rules.
 */
export class NumberSampling {
  private readonly histories = new Map<string, PeriodHistory>();
  private readonly views = new Map<string, NumberView>();
  private readonly zones = new Map<string, TimeZone>();

  constructor(
    private readonly options: NumberSamplingOptions,
    private readonly rules: AlarmRules,
    /** The pool history segment entities have: the take rate over the same window, and the charts. */
    private readonly samples: Pick<EntityHistory, 'recordNumbers'>,
  ) {}

  /**
   * Reads, records, publishes and checks one entity (`capacity`: samples its
   * chart keeps); throws what the read throws (the sampler logs it per entity).
   */
  async sampleEntity(entity: EntityConfig, capacity: number): Promise<void> {
    const settings = entity.numbers;
    if (!this.options.numbers || !settings) return;
    const usage = await this.options.numbers.usage(entity);
    let history = this.histories.get(entity.key);
    if (!history) this.histories.set(entity.key, (history = new PeriodHistory(this.options.periodRateWindowMs)));
    history.record(usage.period.id, { at: usage.now, used: usage.used });
    const zone = this.zoneOf(settings.timeZone);
    const view = {
      ...numberView(usage, history.takePerSecond(usage.period.start), (ms) => zone.wallClock(ms)),
      takePerSecond: this.samples.recordNumbers(entity.key, usage, capacity),
    };
    this.views.set(entity.key, view);
    this.publish(entity.key, view);
    this.rules.checkNumberPeriod(entity, view, (ms) => zone.wallClock(ms));
  }

  private publish(key: string, { usage, forecast, takePerSecond }: NumberView): void {
    const { metrics } = this.options;
    const labels = { entity: key };
    metrics.sampleAge.sampled(key, usage.now);
    metrics.numberPeriodStart.set(labels, usage.period.start / 1000);
    metrics.numberPeriodEnd.set(labels, usage.period.end / 1000);
    metrics.numberPeriodUsed.set(labels, Number(usage.used));
    metrics.numberPeriodCapacity.set(labels, Number(usage.capacity));
    metrics.poolSize.set(labels, usage.ready);
    metrics.takeRate.set(labels, takePerSecond ?? 0);
    metrics.forecastNumberPeriod.set(
      labels,
      forecast.runsOutAt === undefined
        ? Number.POSITIVE_INFINITY
        : Math.max(0, (forecast.runsOutAt - usage.now) / 1000),
    );
  }

  private zoneOf(name: string): TimeZone {
    let zone = this.zones.get(name);
    if (!zone) this.zones.set(name, (zone = timeZone(name)));
    return zone;
  }

  /** The entity's latest reading and forecast, if sampled. */
  view(entityKey: string): NumberView | undefined {
    return this.views.get(entityKey);
  }

  /** Drops a retired entity's readings (its series and alarms go with the sampler's `forget`). */
  forget(entityKey: string): void {
    this.histories.delete(entityKey);
    this.views.delete(entityKey);
  }
}
