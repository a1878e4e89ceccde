import type { EntityConfig } from '../entities/entity';
import type { EntityHistoryOptions } from './entity-history';
import { type AlarmInput, type Alarms, keyOf } from './alarms';
import type { ClockWatch } from '../worker/clock-watch';
import type { EntityForecast, SnowflakeForecast } from './forecast';
import { JS_SAFE_LIMIT } from '../limits';
import { describeSeconds, isoDate, round } from './format';
import { type NumberView, runOutText } from './period-forecast';
import { raised } from './alarm-table';
import type { OpsConfig } from './settings';

/** Conditions must hold this many samples in a row before they alarm (a fresh pool is empty for one). */
const CONFIRM_SAMPLES = 2;

/** What a rule says of its alarm: the name, entity and severity come from the table. */
type Raised = Pick<AlarmInput, 'message' | 'details'> & Partial<Pick<AlarmInput, 'severity'>>;

/** The alarms, what the rules read, and their thresholds (`settings.ts`). */
export interface AlarmRuleOptions
  extends
    Pick<OpsConfig, 'alertHorizonDays' | 'alertPoolDrySeconds' | 'alertPoolLowPercent' | 'alertWorkerRangePercent'>,
    Pick<EntityHistoryOptions, 'demand' | 'stride'> {
  alarms: Alarms;
}

/** This instance's clock against Redis's and the database's, as the running service checks it. */
export type ClockView = Pick<ClockWatch, 'skews' | 'worstSkewMs' | 'state' | 'maxSkewMs'>;

/** The conditions {@link AlarmRules.checkEntity} keeps per entity. */
const ENTITY_CONDITIONS = ['pool_low', 'forecast_pool_dry', 'forecast_js_safe_limit', 'forecast_int63_limit'] as const;
/** The per-entity condition alarms, cleared when an entity is retired. */
const ENTITY_ALARMS = [...ENTITY_CONDITIONS, 'forecast_period_exhausted'] as const;

/** Which sampled conditions raise which alarm: each once held {@link CONFIRM_SAMPLES} in a row, cleared when not. */
export class AlarmRules {
  private readonly streaks = new Map<string, number>();
  private readonly horizonSeconds: number;

  constructor(private readonly options: AlarmRuleOptions) {
    this.horizonSeconds = options.alertHorizonDays * 86_400;
  }

  /** Whether none of the entity's conditions holds: a check on the same figures changes nothing. */
  quiet(entityKey: string): boolean {
    return ENTITY_CONDITIONS.every((name) => !this.streaks.has(keyOf({ name, entityKey })));
  }

  /** Raises or clears the entity's pool and forecast alarms; `serving` once its pool first reached its watermark (before, an empty pool is just new). */
  checkEntity(entity: EntityConfig, size: number, at: number, f: EntityForecast, serving: boolean): void {
    const key = entity.key;
    const { alertHorizonDays, alertPoolLowPercent: poolLowPercent } = this.options;
    const watermark = this.options.demand.lowWatermark(entity);
    const horizon = `(horizon ${round(alertHorizonDays)} days)`;
    const when = (seconds: number) => (seconds === 0 ? 'now' : `in ${describeSeconds(seconds)}`);
    const limit = (seconds: number) => ({
      seconds: round(seconds),
      at: isoDate(at + seconds * 1000),
      highestId: f.highestId.toString(),
      takePerSecond: round(f.takePerSecond),
    });
    this.condition(serving && size < (watermark * poolLowPercent) / 100, 'pool_low', key, () => ({
      message: `pool of ${key} is below ${poolLowPercent}% of its low watermark: the refiller is not keeping up`,
      details: { size, lowWatermark: watermark, max: entity.maxPoolSize },
    }));
    // Only below the watermark: above, the pool is as deep as demand asks; below, the refiller should have acted.
    const dry = serving && size < watermark && f.poolDrySeconds < this.options.alertPoolDrySeconds;
    this.condition(dry, 'forecast_pool_dry', key, () => ({
      message: `pool of ${key} is below its low watermark and runs dry in ${round(f.poolDrySeconds)} s at the current take rate without refills`,
      details: { seconds: round(f.poolDrySeconds), size, takePerSecond: round(f.takePerSecond) },
    }));
    // Only for entities that started below 2^53: their consumers may hold ids in JS numbers.
    const startsSafe = this.options.stride.of(entity).toId(entity.startOffset) < JS_SAFE_LIMIT;
    const within = (seconds: number) => serving && seconds <= this.horizonSeconds;
    this.condition(startsSafe && within(f.jsSafeSeconds), 'forecast_js_safe_limit', key, () => ({
      message: `ids of ${key} pass 2^53 (unsafe as JavaScript numbers) ${when(f.jsSafeSeconds)} ${horizon}`,
      details: limit(f.jsSafeSeconds),
    }));
    this.condition(within(f.int63Seconds), 'forecast_int63_limit', key, () => ({
      message: `ids of ${key} reach the end of the 63-bit number line ${when(f.int63Seconds)} ${horizon}`,
      details: limit(f.int63Seconds),
    }));
  }

  /** `forecast_period_exhausted` while a period is full or will be before it ends; times in the entity's zone. */
  checkNumberPeriod(entity: EntityConfig, view: NumberView, wallClock: (ms: number) => string): void {
    const { usage, forecast } = view;
    const key = entity.key;
    const full = usage.used >= usage.capacity;
    const ends = runOutText(wallClock, usage.now, usage.period.end);
    this.condition(forecast.beforeEnd, 'forecast_period_exhausted', key, () => ({
      message: full
        ? `${key}: ${usage.digits} digits ran out; period ${usage.period.id} is full until ${ends} (${usage.timeZone})`
        : `${key}: ${usage.digits} digits run out at ${view.runsOutLocal} (${usage.timeZone}), before period ${usage.period.id} ends at ${ends}: ${usage.used} of ${usage.capacity} used, ${round(forecast.takePerSecond)}/s`,
      details: {
        period: usage.period.id,
        used: usage.used.toString(),
        capacity: usage.capacity.toString(),
        takePerSecond: round(forecast.takePerSecond),
        runsOutAt: isoDate(forecast.runsOutAt),
        periodEnd: isoDate(usage.period.end),
        timeZone: usage.timeZone,
      },
    }));
  }

  /** `lease_lost` while this instance holds no usable worker lease. */
  checkLease(status: { workerId: number | undefined; held: boolean }): void {
    this.condition(!status.held, 'lease_lost', undefined, () => ({
      message: 'this instance holds no usable worker lease: it issues no snowflake ids',
      details: { workerId: status.workerId ?? null },
    }));
  }

  /** `clock_skew` while this instance's clock is further than half the bound from Redis's or the database's. */
  checkClockSkew(clock: ClockView): void {
    const worstMs = clock.worstSkewMs();
    const state = clock.state();
    this.condition(state !== 'ok', 'clock_skew', undefined, () => ({
      severity: state === 'refusing' ? 'critical' : 'warning',
      message: `this instance's clock is ${Math.round(Math.abs(worstMs))} ms ${worstMs > 0 ? 'ahead of' : 'behind'} Redis's or the database's (IDPOOL_MAX_CLOCK_SKEW_MS=${clock.maxSkewMs}): ${state === 'refusing' ? 'it issues no snowflake ids until it is back within it' : 'past half the bound; fix time synchronisation (NTP)'}`,
      details: {
        skewMs: Object.fromEntries(clock.skews().map((r) => [r.against, r.skewMs])),
        maxSkewMs: clock.maxSkewMs,
      },
    }));
  }

  /** `worker_range_nearly_full` when most of the deployment's worker ids are leased. */
  checkWorkerRange(inUse: number, total: number): void {
    const full = total > 0 && (inUse * 100) / total >= this.options.alertWorkerRangePercent;
    this.condition(full, 'worker_range_nearly_full', undefined, () => ({
      message: `${inUse} of ${total} worker ids are leased: new instances may find none free`,
      details: { inUse, total, percent: round((inUse * 100) / total) },
    }));
  }

  /** When the service-wide snowflake layout runs out, or passes 2^53, within the horizon. */
  checkSnowflake(sf: SnowflakeForecast, now: number): void {
    const soon = (at: number) => at - now <= this.horizonSeconds * 1000;
    this.condition(soon(sf.timeExhaustedAt), 'forecast_snowflake_time_exhausted', undefined, () => ({
      message: `the snowflake layout runs out of timestamp bits on ${isoDate(sf.timeExhaustedAt) ?? 'a date past year 275760'}`,
      details: { at: isoDate(sf.timeExhaustedAt) },
    }));
    const js = sf.jsSafeLimitAt;
    this.condition(js !== undefined && js > now && soon(js), 'forecast_snowflake_js_safe_limit', undefined, () => ({
      message: `snowflake ids pass 2^53 (unsafe as JavaScript numbers) on ${isoDate(js)}`,
      details: { at: isoDate(js) },
    }));
  }

  /** Clears a retired entity's alarms and streaks. */
  forgetEntity(key: string): void {
    for (const name of ENTITY_ALARMS) {
      this.streaks.delete(keyOf({ name, entityKey: key }));
      this.options.alarms.clear(name, key);
    }
  }

  /** Sets (after {@link CONFIRM_SAMPLES}; this instance's own at once) or clears an alarm, built only when raised. */
  private condition(
    holds: boolean,
    name: AlarmInput['name'],
    entityKey: string | undefined,
    alarm: () => Raised,
  ): void {
    const key = keyOf({ name, entityKey });
    if (!holds) {
      this.streaks.delete(key);
      this.options.alarms.clear(name, entityKey);
      return;
    }
    const streak = (this.streaks.get(key) ?? 0) + 1;
    this.streaks.set(key, streak);
    if (entityKey === undefined || streak >= CONFIRM_SAMPLES)
      this.options.alarms.set(raised(name, { ...(entityKey === undefined ? {} : { entityKey }), ...alarm() }));
  }
}
