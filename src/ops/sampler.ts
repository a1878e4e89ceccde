import type { EntityConfig } from '../entities/entity';
import type { Demand } from '../pool/demand';
import type { PoolLevel } from '../pool/pool-store';
import type { SegmentAllocator } from '../segment/allocator';
import type { Logger } from '../logger';
import { LOOP_FAILURE_LIMITS, RepeatLimiter, withRepeated } from '../repeat-limiter';
import { ActivityRound, type Periodic, every } from '../schedule';
import { AlarmRules, type AlarmRuleOptions, type ClockView } from './alarm-rules';
import { type EntityOverview, dashboardRows } from './dashboard-rows';
import { EntityHistory, type EntityHistoryOptions } from './entity-history';
import { type NumberView, PeriodHistory, numberView } from './period-forecast';
import { type TimeZone, timeZone } from '../numbers/zone';
import type { NumberAdmin } from '../pool/period-pools';
import type { OpsMetrics } from './metrics';
import type { OpsConfig } from './settings';
import type { EntityForecast, SnowflakeForecast } from './forecast';
import type { Clock } from '../clock';
import { round } from './format';
import { errorMessage } from '../errors';

/** Active entities one run reads at most: one pipeline of 1,000 LLEN and one SQL query for 1,000 offsets, a few ms. */
const SAMPLE_BATCH = 1000;
/**
 * Idle entities one run reads, going round (an idle pool's figures do not move): 50 s a round at 10,000. Reading
 * 1,000 idle pools a second here and 1,000 in the sweep cost 6.6 % of a core at 10,000 (bench/scale.bench.ts).
 */
const IDLE_BATCH = 200;
/** An entity taken from is read every run for this long after. */
const ACTIVE_MS = 60_000;
/** Worker usage reads every worker row: every 10 s is plenty for a range that fills over hours. */
const USAGE_EVERY_MS = 10_000;
/** A sample older than this many rounds is stale (one round late is load; two is a stopped sampler). */
const STALE_ROUNDS = 2;

/** This instance's worker lease as the ops side sees it (snowflake mode). */
export interface LeaseView {
  status(): { workerId: number | undefined; held: boolean; expiresAt?: number };
  /** Worker ids of this deployment's range, and how many have a live lease. */
  usage?(): Promise<{ inUse: number; total: number }>;
}

/** Where the sampler reads a business-number entity's period. */
export type NumberUsageSource = Pick<NumberAdmin, 'usage'>;

/** A pool's level (or why it could not be read) and the wall-clock ms its read began. */
interface ReadLevel {
  readonly level: PoolLevel | Error;
  readonly at: number;
}

/** What the sampler reads and where it reports, with its history's and alarm rules' options and its settings. */
export interface SamplerOptions
  extends EntityHistoryOptions, AlarmRuleOptions, Pick<OpsConfig, 'periodRateWindowMs' | 'historyMs'> {
  clock: Clock;
  metrics: OpsMetrics;
  /** Where business-number periods are read (none: no business-number entity is sampled). */
  numbers?: NumberUsageSource;
  /** Read when first needed: the snowflake layout is built after the pool side. */
  snowflake?: () => SnowflakeForecast | undefined;
  /** This instance's worker lease and its clock against Redis's and the database's (snowflake mode). */
  lease?: LeaseView;
  clockWatch?: ClockView;
  entities: { list(): EntityConfig[]; get(entityKey: string): EntityConfig | undefined };
  /** What the events tell of activity (default: a feed of its own, told nothing). */
  feed?: SamplerFeed;
  /** Pool levels (`taken` makes the take rate exact); an Error where that entity's keys could not be read. */
  poolStore: { levels(keys: readonly string[]): Promise<(PoolLevel | Error)[]> };
  demand: Pick<Demand, 'target' | 'lowWatermark' | 'sizing'>;
  allocator: Pick<SegmentAllocator, 'peekMany'>;
  log: Logger;
}

/**
 * What the ops events write for the sampler, built before it (the pools report to the events, and the
 * sampler reads the pools' numbers layer): the entities taken from, and the pool levels the sweep read.
 */
export class SamplerFeed {
  /** Each run's entities: those taken from in the last ACTIVE_MS, and IDLE_BATCH more going round. */
  readonly round: ActivityRound<EntityConfig>;
  private fed: { levels: Map<string, ReadLevel>; rounds: number } | undefined;

  constructor(private readonly options: Pick<SamplerOptions, 'entities' | 'clock' | 'sampleMs'>) {
    const segment = (entity: EntityConfig | undefined) => (entity && entity.mode !== 'snowflake' ? entity : undefined);
    this.round = new ActivityRound({
      list: () => options.entities.list().filter((e) => e.mode !== 'snowflake'),
      keyOf: (entity) => entity.key,
      lookup: (key) => segment(options.entities.get(key)),
      idleBatch: IDLE_BATCH,
      activeBatch: SAMPLE_BATCH,
      activeMs: ACTIVE_MS,
      now: () => options.clock.now(),
    });
  }

  /**
   * Pool levels the sweep read from `readAt`, its round over every pool taking `roundMs`. Once fed, the
   * sampler's idle batch is the sweep's: each idle pool is read once for both (`sweep-activity.test.ts`).
   */
  offer(levels: ReadonlyMap<string, PoolLevel>, roundMs: number, readAt: number): void {
    const rounds = Math.max(1, Math.ceil(roundMs / this.options.sampleMs));
    const fed = (this.fed ??= { levels: new Map(), rounds });
    fed.rounds = rounds;
    for (const [key, level] of levels) fed.levels.set(key, { level, at: readAt });
  }

  /** The levels fed since the last call and the runs the sweep's round takes; undefined until the sweep feeds. */
  drain(): { levels: ReadonlyMap<string, ReadLevel>; rounds: number } | undefined {
    const fed = this.fed;
    if (fed) this.fed = { levels: new Map(), rounds: fed.rounds };
    return fed;
  }
}

/**
 * Every `sampleMs`: reads pool sizes (one Redis round trip) and offsets (one SQL query), keeps a short
 * history, sets the gauges and hands the conditions to {@link AlarmRules}; off the request path. The same
 * run reads each business-number period and, in snowflake mode, the lease, its range and the forecasts.
 */
export class OpsSampler {
  private readonly history: EntityHistory;
  private lastUsageAt = Number.NEGATIVE_INFINITY;
  /** Business-number entities: their period's readings, latest view and zone. */
  private readonly periods = new Map<string, PeriodHistory>();
  private readonly numberViews = new Map<string, NumberView>();
  private readonly zones = new Map<string, TimeZone>();
  private readonly rules: AlarmRules;
  private readonly schedule: Periodic;
  private readonly failureLog: RepeatLimiter;
  /** Runs a round over every idle entity takes. */
  private rounds = 1;
  /** An entity never sampled since is stale after two rounds too. */
  private startedAt: number | undefined;
  /** Entities registered since sampling started and not sampled yet: when this process first looked at each. */
  private readonly firstLooked = new Map<string, number>();
  /** When a run last read the pools without failing (the fleet heartbeat publishes it). */
  private lastSampledAt: number | undefined;
  private readonly feed: SamplerFeed;
  private readonly round: ActivityRound<EntityConfig>;

  constructor(private readonly options: SamplerOptions) {
    this.schedule = every(options.sampleMs, () => this.sampleOnce(), options.clock);
    this.failureLog = new RepeatLimiter(options.clock, LOOP_FAILURE_LIMITS);
    this.rules = new AlarmRules(options);
    this.history = new EntityHistory(options);
    this.feed = options.feed ?? new SamplerFeed(options);
    this.round = this.feed.round;
  }

  /**
   * This run's entities and the levels already known: the round's batch or, once the sweep feeds, the
   * pools it read plus the batch's active and business-number entities (the sweep reads no number pool).
   */
  private batch(items: EntityConfig[], rounds: number) {
    const fed = this.feed.drain();
    if (!fed) return { entities: items, known: new Map<string, ReadLevel>(), rounds };
    const batch = new Map<string, EntityConfig>();
    for (const entity of items) if (entity.numbers || this.round.isActive(entity.key)) batch.set(entity.key, entity);
    for (const key of fed.levels.keys()) {
      const entity = this.options.entities.get(key);
      if (entity && entity.mode !== 'snowflake') batch.set(key, entity);
    }
    return { entities: [...batch.values()], known: fed.levels, rounds: Math.max(rounds, fed.rounds) };
  }

  /** Samples now and then every `sampleMs`. */
  start(): void {
    this.startedAt = this.options.clock.now();
    this.schedule.start();
    void this.schedule.runNow();
  }

  stop(): Promise<void> {
    return this.schedule.stop();
  }

  /** One run: each step runs whatever the others do; a failure is logged (at most once a minute), never thrown. */
  async sampleOnce(): Promise<void> {
    if (await this.guard('entities', undefined, () => this.sampleEntities()))
      this.lastSampledAt = this.options.clock.now();
    await this.guard('lease', undefined, () => this.sampleLease());
    await this.guard('snowflake', undefined, () => this.checkSnowflake());
    await this.guard('clock', undefined, () => this.sampleClock());
  }

  /** The lease's gauges and alarm; the range's use at most every {@link USAGE_EVERY_MS}. */
  async sampleLease(): Promise<void> {
    const lease = this.options.lease;
    if (!lease) return;
    const { metrics } = this.options;
    const status = lease.status();
    const now = this.options.clock.now();
    metrics.leaseHeld.set(status.held ? 1 : 0);
    metrics.leaseWorkerId.set(status.workerId ?? -1);
    const expiresAt = status.held ? (status.expiresAt ?? now) : now;
    metrics.leaseRemaining.set(Math.max(0, (expiresAt - now) / 1000));
    this.rules.checkLease(status);
    if (lease.usage && now - this.lastUsageAt >= USAGE_EVERY_MS) {
      this.lastUsageAt = now;
      const { inUse, total } = await lease.usage();
      metrics.workersInUse.set(inUse);
      metrics.workersAvailable.set(total);
      this.rules.checkWorkerRange(inUse, total);
    }
  }

  /** The clock's skews (`idpool_clock_skew_seconds`) and the `clock_skew` alarm. */
  sampleClock(): void {
    const watch = this.options.clockWatch;
    if (!watch) return;
    for (const r of watch.skews())
      if (r.skewMs !== null) this.options.metrics.clockSkew.set({ against: r.against }, r.skewMs / 1000);
    this.rules.checkClockSkew(watch);
  }

  /** The snowflake forecasts' gauges and alarms. */
  checkSnowflake(): void {
    const sf = this.options.snowflake?.();
    if (!sf) return;
    this.options.metrics.snowflakeTimeExhausted.set(sf.timeExhaustedAt / 1000);
    this.options.metrics.snowflakeJsSafe.set((sf.jsSafeLimitAt ?? Number.POSITIVE_INFINITY) / 1000);
    this.rules.checkSnowflake(sf, this.options.clock.now());
  }

  private async guard(step: string, entityKey: string | undefined, run: () => unknown): Promise<boolean> {
    try {
      await run();
      return true;
    } catch (err) {
      this.failed(step, entityKey, err);
      return false;
    }
  }

  /** {@link guard} for a step that does not wait: 200 idle entities a second cost no promise each. */
  private guardNow(step: string, entityKey: string, run: () => void): void {
    try {
      run();
    } catch (err) {
      this.failed(step, entityKey, err);
    }
  }

  /** Counts and logs (at most once a minute per step or entity) a failed step. */
  private failed(step: string, entityKey: string | undefined, err: unknown): void {
    if (entityKey !== undefined) this.options.metrics.sampleFailures.inc({ entity: entityKey });
    const repeated = this.failureLog.admit(entityKey ?? `\u0000${step}`);
    if (repeated === undefined) return;
    const [fields, msg] =
      entityKey === undefined
        ? [{ step }, 'ops sampling failed']
        : [{ entityKey }, 'ops sampling of an entity failed: the others go on'];
    this.options.log.warn(withRepeated({ ...fields, err: errorMessage(err) }, repeated), msg);
  }

  private async sampleEntities(): Promise<void> {
    // `listed` is set when a round starts (the registry is listed once a round).
    const { items, listed, rounds: ownRounds } = this.round.next();
    const live = listed && new Set(listed.map((e) => e.key));
    const { entities: picked, known, rounds } = this.batch(items, ownRounds);
    // Business numbers have no pool or offset of their own: their periods are read apart.
    const entities = picked.filter((e) => !e.numbers);
    const keys = entities.map((e) => e.key);
    const unread = keys.filter((key) => !known.has(key));
    // A sample is dated when its read of the pool began: for the levels the sweep fed, the sweep's read.
    const readAt = this.options.clock.now();
    const [offsets, read] = await Promise.all([
      this.options.allocator.peekMany(keys),
      this.options.poolStore.levels(unread),
    ]);
    const readLevels = new Map(unread.map((key, i) => [key, read[i]]));
    const levels = keys.map(
      (key) => known.get(key) ?? { level: readLevels.get(key) ?? new Error('no level read'), at: readAt },
    );
    // History covers historyMs whatever the round: an idle entity, sampled every `rounds` runs, keeps fewer samples.
    const { historyMs, sampleMs } = this.options;
    const capacity = (key: string) =>
      Math.max(2, Math.ceil(historyMs / (sampleMs * (this.round.isActive(key) ? 1 : rounds))) + 1);
    this.rounds = rounds;
    this.options.metrics.sampleRound.set((sampleMs * rounds) / 1000);
    for (const [i, entity] of entities.entries())
      this.guardNow('entity', entity.key, () =>
        this.sampleEntity(entity, levels[i], offsets.get(entity.key), capacity(entity.key)),
      );
    // Side by side: two Redis round trips each, in flight together on the one connection.
    const numbered = picked.filter((e) => e.numbers);
    await Promise.all(numbered.map((e) => this.guard('entity', e.key, () => this.sampleNumbers(e, capacity(e.key)))));
    if (!live) return;
    for (const key of this.history.keys()) if (!live.has(key)) this.forget(key);
    // Entities retired before their first sample.
    for (const key of [...this.options.metrics.sampleAge.values.keys()])
      if (!live.has(key)) this.options.metrics.sampleAge.remove({ entity: key });
    for (const key of [...this.firstLooked.keys()]) if (!live.has(key)) this.firstLooked.delete(key);
  }

  /** A business-number entity: now's period, read by the clock that decides it; throws what the read throws. */
  private async sampleNumbers(entity: EntityConfig, capacity: number): Promise<void> {
    const settings = entity.numbers;
    if (!this.options.numbers || !settings) return;
    const usage = await this.options.numbers.usage(entity);
    const history = cached(this.periods, entity.key, () => new PeriodHistory(this.options.periodRateWindowMs));
    history.record(usage.period.id, { at: usage.now, used: usage.used });
    const zone = cached(this.zones, settings.timeZone, timeZone);
    const view = {
      ...numberView(usage, history.takePerSecond(usage.period.start), (ms) => zone.wallClock(ms)),
      takePerSecond: this.history.recordNumbers(entity.key, usage, capacity),
    };
    this.numberViews.set(entity.key, view);
    const { metrics } = this.options;
    const labels = { entity: entity.key };
    metrics.sampleAge.set(labels, usage.now);
    metrics.numberPeriodStart.set(labels, usage.period.start / 1000);
    metrics.numberPeriodEnd.set(labels, usage.period.end / 1000);
    metrics.numberPeriodUsed.set(labels, Number(usage.used));
    metrics.numberPeriodCapacity.set(labels, Number(usage.capacity));
    metrics.poolSize.set(labels, usage.ready);
    metrics.takeRate.set(labels, view.takePerSecond);
    const runsOutAt = view.forecast.runsOutAt ?? Number.POSITIVE_INFINITY;
    metrics.forecastNumberPeriod.set(labels, Math.max(0, (runsOutAt - usage.now) / 1000));
    this.rules.checkNumberPeriod(entity, view, (ms) => zone.wallClock(ms));
  }

  private sampleEntity(
    entity: EntityConfig,
    { level, at }: ReadLevel,
    offset: bigint | undefined,
    capacity: number,
  ): void {
    if (level instanceof Error) throw level;
    // No row: retired since the list was read, or not committed yet.
    if (offset === undefined) return;
    const { size, taken } = level;
    if (!Number.isFinite(size) || size < 0) throw new RangeError(`pool size ${size} is not a count`);
    // A sweep's read fed after this sampler read the pool itself is older: a sample's date never goes back.
    const seen = this.sampledAt(entity.key);
    if (seen !== undefined && at < seen) return;
    const { metrics, demand } = this.options;
    metrics.sampleAge.set({ entity: entity.key }, at);
    const last = this.history.lastSample(entity.key);
    // Taken from since the last sample (the take counter moved, reserved beyond what the pool grew, or served
    // here): active. A refill alone moves offset and size together and leaves an idle entity idle.
    if (
      last &&
      (taken !== last.taken ||
        Number(offset - last.offset) - (size - last.size) > 0 ||
        (last.served ?? 0) !== (this.options.served?.(entity.key) ?? 0))
    )
      this.round.touch(entity.key, at);
    else if (this.unchanged(entity, size, offset)) return;
    const f = this.history.record(entity, { at, size, offset, taken }, capacity);
    if (!f) return;
    const labels = { entity: entity.key };
    metrics.poolSize.set(labels, size);
    metrics.poolLowWatermark.set(labels, demand.lowWatermark(entity));
    metrics.poolTarget.set(labels, demand.target(entity));
    metrics.poolMax.set(labels, entity.maxPoolSize);
    metrics.currentOffset.set(labels, Number(offset));
    metrics.takeRate.set(labels, f.takePerSecond);
    metrics.reserveRate.set(labels, f.reservePerSecond);
    metrics.forecastPoolDry.set(labels, f.poolDrySeconds);
    metrics.forecastJsSafe.set(labels, f.jsSafeSeconds);
    metrics.forecastInt63.set(labels, f.int63Seconds);
    this.rules.checkEntity(entity, size, at, f, this.history.filled(entity.key));
  }

  /** Idle, at rest, no condition holding, the same watermark, target and max: only its sample age would be new. */
  private unchanged(entity: EntityConfig, size: number, offset: bigint): boolean {
    if (this.round.isActive(entity.key) || !this.rules.quiet(entity.key)) return false;
    if (!this.history.atRest(entity.key, size, offset)) return false;
    const { metrics, demand } = this.options;
    return (
      metrics.poolLowWatermark.values.get(entity.key) === demand.lowWatermark(entity) &&
      metrics.poolTarget.values.get(entity.key) === demand.target(entity) &&
      metrics.poolMax.values.get(entity.key) === entity.maxPoolSize
    );
  }

  /** Drops a retired entity's history, gauges and alarms. */
  private forget(key: string): void {
    this.failureLog.forget(key);
    this.history.forget(key);
    this.periods.delete(key);
    this.numberViews.delete(key);
    this.options.metrics.forgetEntity(key);
    this.rules.forgetEntity(key);
  }

  /** Pool, rates, forecasts and chart history of the given entities (the dashboard's page; default all). */
  overview(entities: readonly EntityConfig[] = this.options.entities.list()): EntityOverview[] {
    return dashboardRows(
      entities,
      {
        demand: this.options.demand,
        history: this.history,
        numbers: (key) => this.numberViews.get(key),
        sampledAt: (key) => this.sampledAt(key),
        isStale: (key, now) => this.isStale(key, now),
      },
      this.options.clock.now(),
    );
  }

  private sampledAt(entityKey: string): number | undefined {
    return this.options.metrics.sampleAge.values.get(entityKey);
  }

  /** Sampled over two rounds ago, or never sampled for as long. */
  private isStale(entityKey: string, now: number): boolean {
    const sampled = this.sampledAt(entityKey);
    if (sampled !== undefined && this.firstLooked.size > 0) this.firstLooked.delete(entityKey);
    const at = sampled ?? this.unsampledSince(entityKey, now);
    return at !== undefined && now - at > STALE_ROUNDS * this.rounds * this.options.sampleMs + this.options.sampleMs;
  }

  /**
   * Since when a never-sampled entity has waited: since sampling started or, if registered later, since
   * this process first looked at it (registering 60 entities must not read "sampling behind" at once).
   */
  private unsampledSince(entityKey: string, now: number): number | undefined {
    const started = this.startedAt;
    if (started === undefined) return undefined;
    const entity = this.options.entities.get(entityKey);
    if (!entity || entity.createTime <= started) return started;
    const first = this.firstLooked.get(entityKey);
    if (first !== undefined) return first;
    this.firstLooked.set(entityKey, now);
    return now;
  }

  /** How current the sampled view is: `/readyz` and the dashboard report it (OpenAPI `Sampling`). */
  health() {
    const now = this.options.clock.now();
    let stale = 0;
    for (const entity of this.options.entities.list())
      if (entity.mode !== 'snowflake' && this.isStale(entity.key, now)) stale++;
    return {
      ok: stale === 0,
      oldestSampleAgeSeconds: round(this.options.metrics.sampleAge.maxAge()),
      roundSeconds: (this.rounds * this.options.sampleMs) / 1000,
      staleEntities: stale,
    };
  }

  lastSampleAt(): number | undefined {
    return this.lastSampledAt;
  }

  /** The latest period reading and forecast of a business-number entity (`GET /admin/apps`, tests). */
  numberView(entityKey: string): NumberView | undefined {
    return this.numberViews.get(entityKey);
  }

  /** The latest forecast of one entity (tests, CLI). */
  forecast(entityKey: string): EntityForecast | undefined {
    return this.history.forecast(entityKey);
  }
}

/** The value `map` holds for `key`, made and kept when it holds none. */
function cached<K, V>(map: Map<K, V>, key: K, make: (key: K) => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make(key)));
  return value;
}
