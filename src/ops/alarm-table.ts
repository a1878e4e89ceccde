import { DEFAULT_LEASE } from '../worker/lease';
import { DEFAULT_OPS } from './settings';

// Every alarm once, with its severity and the Prometheus alert watching the same condition.
// scripts/prometheus-rules.js writes deploy/prometheus/idpool-rules.yml from this table (`npm run rules`;
// prometheus-rules.test.ts fails while it differs); thresholds are idpool's defaults, so the two cannot drift.

export type AlarmSeverity = 'warning' | 'critical';

/** One Prometheus alerting rule; `note` is the comment written above it. */
export interface PrometheusAlert {
  readonly alert: string;
  readonly note?: string;
  readonly expr: string;
  readonly for?: string;
  readonly summary: string;
  readonly description: string;
}

interface AlarmRow {
  /** idpool's name for it; none for a condition only Prometheus sees (a dependency down, 5xx answers). */
  readonly alarm?: string;
  /** Its former name, logged and counted beside it for one release after a rename (docs/operating.md). */
  readonly alias?: string;
  /** The severity of both; `clock_skew` turns critical in-process once snowflake ids are refused. */
  readonly severity: AlarmSeverity;
  readonly prometheus?: PrometheusAlert;
}

const ops = DEFAULT_OPS;
const horizonSeconds = `${ops.alertHorizonDays} * 86400`;
const poolDrySeconds = 30;

function alarm<Name extends string>(name: Name, severity: AlarmSeverity, prometheus: PrometheusAlert) {
  return { alarm: name, severity, prometheus };
}

function prometheusOnly(severity: AlarmSeverity, prometheus: PrometheusAlert) {
  return { severity, prometheus };
}

/** The rows in the order the rules file lists them. */
export const ALARM_TABLE = [
  alarm('pool_low', 'warning', {
    alert: 'IdpoolPoolLow',
    note: `idpool's pool_low: IDPOOL_ALERT_POOL_LOW_PERCENT (${ops.alertPoolLowPercent}) % of the low watermark.`,
    expr: `max by (job, entity) (idpool_pool_size) < ${ops.alertPoolLowPercent / 100} * max by (job, entity) (idpool_pool_low_watermark)`,
    for: '2m',
    summary: 'idpool pool of {{ $labels.entity }} is below half its low watermark',
    description:
      'The pool of entity {{ $labels.entity }} ({{ $labels.job }}) holds {{ $value }} ids and has stayed under half its low watermark for 2 minutes: the refiller is not keeping up (database slow or locked, Redis full, or demand above what refills fetch).',
  }),
  alarm('forecast_pool_dry', 'warning', {
    alert: 'IdpoolPoolDryForecast',
    note: `idpool's forecast_pool_dry, at half of IDPOOL_POOL_HORIZON_S (60 s) rather
than its ${ops.alertPoolDrySeconds} s: a scrape every 15-30 s would see a ${ops.alertPoolDrySeconds} s forecast too late.`,
    expr: `max by (job, entity) (idpool_pool_size) < max by (job, entity) (idpool_pool_low_watermark)
and
min by (job, entity) (idpool_forecast_pool_dry_seconds) < ${poolDrySeconds}`,
    for: '1m',
    summary: `idpool pool of {{ $labels.entity }} runs dry within ${poolDrySeconds} s`,
    description: `The pool of entity {{ $labels.entity }} ({{ $labels.job }}) has stayed below its low watermark for a minute with under ${poolDrySeconds} s of ids left at the current take rate: requests will soon get 503 pool_exhausted.`,
  }),
  alarm('pool_exhausted', 'critical', {
    alert: 'IdpoolPoolExhausted',
    note: `idpool's pool_exhausted. The second half catches the first exhaustion an
instance counts: a counter series that appears already at 1 has no
earlier sample for increase() to compare with. (After a gap of 5 min in
the data, Prometheus's own restart, a counter above 0 fires it once.)`,
    expr: `sum by (job, entity) (increase(idpool_pool_exhausted_total[5m])) > 0
or
sum by (job, entity) (idpool_pool_exhausted_total unless idpool_pool_exhausted_total offset 5m) > 0`,
    summary: 'idpool answered 503 pool_exhausted for {{ $labels.entity }}',
    description:
      'Requests for entity {{ $labels.entity }} ({{ $labels.job }}) found too few ids after waiting for a refill in the last 5 minutes ({{ $value }} counted): clients got 503.',
  }),
  alarm('period_exhausted', 'critical', {
    alert: 'IdpoolNumberPeriodFull',
    note: `idpool's period_exhausted, as a state: every number of a business-number
entity's current period is used, so takes answer 503 period_exhausted
until the next period starts (they also count in IdpoolPoolExhausted).`,
    expr: 'max by (job, entity) (idpool_number_period_used) >= max by (job, entity) (idpool_number_period_capacity)',
    summary: 'idpool business numbers of {{ $labels.entity }} ran out for this period',
    description:
      'All {{ $value }} numbers of the current period of entity {{ $labels.entity }} ({{ $labels.job }}) are used: takes answer 503 period_exhausted until the next period starts. A wider {seq:N} needs a new entity (docs/numbers.md, Capacity and alarms).',
  }),
  alarm('forecast_period_exhausted', 'warning', {
    alert: 'IdpoolNumberPeriodExhaustedForecast',
    note: `idpool's forecast_period_exhausted: at the rate over
IDPOOL_OPS_PERIOD_RATE_WINDOW_MS (${ops.periodRateWindowMs / 60_000} min) the period's numbers run out
before it ends. \`for: 5m\` as idpool confirms over two samples: a
one-scrape spike is not a trend. Not once the period is full (above).`,
    expr: `min by (job, entity) (idpool_forecast_number_period_exhausted_seconds)
  < max by (job, entity) (idpool_number_period_end_timestamp_seconds) - time()
and
max by (job, entity) (idpool_number_period_used) < max by (job, entity) (idpool_number_period_capacity)`,
    for: '5m',
    summary: 'idpool business numbers of {{ $labels.entity }} run out before the period ends',
    description: `At the rate of the last ${ops.periodRateWindowMs / 60_000} minutes the current period of entity {{ $labels.entity }} ({{ $labels.job }}) runs out of numbers in {{ $value | humanizeDuration }}, before the next period starts: then takes answer 503 period_exhausted. The forecast_period_exhausted alarm names the time in the entity's zone; a wider {seq:N} needs a new entity.`,
  }),
  alarm('database_behind', 'critical', {
    alert: 'IdpoolDatabaseBehind',
    note: `idpool's database_behind: raised once per episode (the entity is
carried past the fence or high-water file in one reservation), so any
increase is worth a look for an hour. The second half catches a
series that appears already at 1, as for IdpoolPoolExhausted.`,
    expr: `sum by (job, entity) (increase(idpool_database_behind_total[1h])) > 0
or
sum by (job, entity) (idpool_database_behind_total unless idpool_database_behind_total offset 1h) > 0`,
    summary: 'idpool found the database behind for {{ $labels.entity }}',
    description:
      'The database of {{ $labels.job }} handed out an offset of entity {{ $labels.entity }} below what was reserved before (restored from a backup, or failed over to a lagging replica); idpool carried the offset past it and repeated nothing. Check the restore: the database_behind alarm names the offsets (docs/ha.md, Runbook after a restore).',
  }),
  alarm('forecast_js_safe_limit', 'warning', {
    alert: 'IdpoolJsSafeLimitForecast',
    note: `idpool's forecast_js_safe_limit, IDPOOL_ALERT_HORIZON_DAYS (${ops.alertHorizonDays}). 0 means
already past: an entity registered above 2^53 reads 0 for ever, and
one that crossed was alerted on for ${ops.alertHorizonDays} days before.`,
    expr: `min by (job, entity) (idpool_forecast_js_safe_limit_seconds) > 0 < ${horizonSeconds}`,
    for: '30m',
    summary: `ids of {{ $labels.entity }} pass 2^53 within ${ops.alertHorizonDays} days`,
    description:
      'At its current take rate entity {{ $labels.entity }} ({{ $labels.job }}) hands out ids above 2^53 in {{ $value | humanizeDuration }}: consumers holding ids in JavaScript numbers or doubles lose precision from then on.',
  }),
  alarm('forecast_int63_limit', 'critical', {
    alert: 'IdpoolInt63LimitForecast',
    note: "idpool's forecast_int63_limit: the end of the signed 64-bit number line.",
    expr: `min by (job, entity) (idpool_forecast_int63_limit_seconds) < ${horizonSeconds}`,
    for: '30m',
    summary: `ids of {{ $labels.entity }} reach 2^63 within ${ops.alertHorizonDays} days`,
    description:
      'At its current take rate entity {{ $labels.entity }} ({{ $labels.job }}) reaches the end of the 63-bit number line in {{ $value | humanizeDuration }}: after that it can issue no id.',
  }),
  alarm('forecast_snowflake_time_exhausted', 'critical', {
    alert: 'IdpoolSnowflakeTimeExhaustedForecast',
    note: `idpool's forecast_snowflake_time_exhausted (the snowflake layout's 2^63).
A value of 0 is a gauge not yet set by the first sample.`,
    expr: `min by (job) (idpool_snowflake_time_exhausted_timestamp_seconds > 0) - time() < ${horizonSeconds}`,
    for: '30m',
    summary: `the snowflake layout runs out of timestamp bits within ${ops.alertHorizonDays} days`,
    description:
      'Snowflake ids of {{ $labels.job }} run out of timestamp bits in {{ $value | humanizeDuration }}: from then on no snowflake id can be issued.',
  }),
  alarm('forecast_snowflake_js_safe_limit', 'warning', {
    alert: 'IdpoolSnowflakeJsSafeLimitForecast',
    note: "idpool's forecast_snowflake_js_safe_limit; a date already past is not alerted (the layout chose it).",
    expr: `min by (job) (idpool_snowflake_js_safe_limit_timestamp_seconds) - time() > 0 < ${horizonSeconds}`,
    for: '30m',
    summary: `snowflake ids pass 2^53 within ${ops.alertHorizonDays} days`,
    description:
      'Snowflake ids of {{ $labels.job }} pass 2^53 in {{ $value | humanizeDuration }}: consumers holding them in JavaScript numbers or doubles lose precision from then on.',
  }),
  alarm('worker_range_nearly_full', 'warning', {
    alert: 'IdpoolWorkerRangeNearlyFull',
    note: `idpool's worker_range_nearly_full, IDPOOL_ALERT_WORKER_RANGE_PERCENT (${ops.alertWorkerRangePercent}).`,
    expr: `max by (job) (idpool_worker_ids_in_use) / max by (job) (idpool_worker_ids_in_range > 0) >= ${ops.alertWorkerRangePercent / 100}`,
    for: '10m',
    summary: '{{ $value | humanizePercentage }} of the worker ids of {{ $labels.job }} are leased',
    description:
      '{{ $value | humanizePercentage }} of the worker ids in IDPOOL_WORKER_MIN..MAX of {{ $labels.job }} have a live lease: new instances may find none free and issue no snowflake id.',
  }),
  alarm('lease_lost', 'critical', {
    alert: 'IdpoolLeaseLost',
    note: `idpool's lease_lost. The range is 0 where no lease is used (a fixed
IDPOOL_WORKER_ID), where lease_held reads 0 as well.`,
    expr: 'idpool_worker_lease_held == 0 and idpool_worker_ids_in_range > 0',
    for: '1m',
    summary: 'idpool instance {{ $labels.instance }} holds no worker lease',
    description:
      'Instance {{ $labels.instance }} ({{ $labels.job }}) has held no usable worker lease for a minute: it issues no snowflake id and /readyz reports it not ready.',
  }),
  alarm('clock_skew', 'warning', {
    alert: 'IdpoolClockSkew',
    note: `idpool's clock_skew, at its threshold: half of IDPOOL_MAX_CLOCK_SKEW_MS
(${DEFAULT_LEASE.maxClockSkewMs / 1000} s). The gauge is the difference as last read (every
IDPOOL_CLOCK_CHECK_MS, 5 s), where idpool's alarm also allows for half
the read's round trip: \`for: 2m\` keeps a slow read or two from firing
it. Past all of the bound the instance's snowflake entities answer 503
clock_skew; business-number periods follow Redis's clock, not this one.`,
    expr: `abs(idpool_clock_skew_seconds) > ${DEFAULT_LEASE.maxClockSkewMs / 2 / 1000}`,
    for: '2m',
    summary: 'the clock of idpool instance {{ $labels.instance }} is off by {{ printf `%.2f` $value }} s',
    description: `The clock of instance {{ $labels.instance }} ({{ $labels.job }}) has been {{ printf \`%.2f\` $value }} s away from {{ $labels.against }}'s for 2 minutes, over half of IDPOOL_MAX_CLOCK_SKEW_MS (${DEFAULT_LEASE.maxClockSkewMs / 1000} s by default): past all of it its snowflake entities answer 503 clock_skew. Check NTP (chrony, timesyncd) on its host.`,
  }),
  prometheusOnly('critical', {
    alert: 'IdpoolDependencyUnavailable',
    expr: 'idpool_dependency_up == 0',
    for: '1m',
    summary: 'idpool instance {{ $labels.instance }} cannot reach {{ $labels.dependency }}',
    description:
      'The {{ $labels.dependency }} readiness probe of instance {{ $labels.instance }} ({{ $labels.job }}) has failed for a minute: requests that need it get 503 and pools are not refilled.',
  }),
  prometheusOnly('warning', {
    alert: 'IdpoolRefillFailing',
    expr: 'sum by (job, instance) (rate(idpool_refill_failures_total[2m])) > 0',
    for: '3m',
    summary: 'refills keep failing on idpool instance {{ $labels.instance }}',
    description:
      "Instance {{ $labels.instance }} ({{ $labels.job }}) has had failed refills or pool sweeps ({{ printf `%.2f` $value }}/s) for 3 minutes: pools drain without being topped up. Its log says why ('refill failed').",
  }),
  prometheusOnly('warning', {
    alert: 'IdpoolOpsSamplingStale',
    note: `The sampler reads every entity at least once a round
(idpool_ops_sample_round_seconds: IDPOOL_OPS_SAMPLE_MS times the runs it
takes to go round the idle entities, a batch a run); idpool
calls a sample stale past two rounds (/readyz's \`sampling\`). The 30 s floor
keeps a slow SQL query or two from paging.`,
    expr: `idpool_ops_sample_age_max_seconds > 2 * idpool_ops_sample_round_seconds
and
idpool_ops_sample_age_max_seconds > 30`,
    for: '2m',
    summary: 'idpool instance {{ $labels.instance }} has stopped sampling some pools',
    description:
      "The oldest per-entity sample of instance {{ $labels.instance }} ({{ $labels.job }}) is {{ $value | humanizeDuration }} old, over two sampling rounds: pool gauges, forecasts and idpool's own pool_low and forecast alarms are stale for those entities (idpool_ops_sample_age_seconds names them, idpool_ops_sample_failures_total counts failed samples).",
  }),
  prometheusOnly('warning', {
    alert: 'IdpoolHttp5xxRate',
    expr: `sum by (job, instance) (rate(idpool_http_request_duration_seconds_count{status=~"5..", route!~"/healthz|/readyz"}[5m]))
/
sum by (job, instance) (rate(idpool_http_request_duration_seconds_count{route!~"/healthz|/readyz"}[5m]))
> 0.05`,
    for: '5m',
    summary: 'idpool instance {{ $labels.instance }} answers {{ $value | humanizePercentage }} of requests with 5xx',
    description:
      'Over 5 % of the requests to instance {{ $labels.instance }} ({{ $labels.job }}) have failed with a 5xx for 5 minutes (probes left out): see idpool_dependency_up and idpool_pool_exhausted_total for the cause.',
  }),
  prometheusOnly('warning', {
    alert: 'IdpoolInstancesDropped',
    note: `fleet/fleet.ts: an instance whose heartbeat is older than
IDPOOL_INSTANCE_TTL_MS (${ops.instanceTtlMs / 1000} s) is gone; it stays listed for 30 TTLs
(5 min), then is dropped. A graceful stop takes itself off the list,
so only a crash, a kill or a lost Redis connection fires this. Every
instance reads the same heartbeats: one alert per job, not per instance.`,
    expr: 'max by (job) (idpool_instances{state="gone"}) > 0',
    for: '1m',
    summary: '{{ $value }} idpool instance(s) of {{ $labels.job }} stopped sending heartbeats',
    description:
      "{{ $value }} instance(s) of {{ $labels.job }} have sent no heartbeat within IDPOOL_INSTANCE_TTL_MS for a minute without stopping gracefully: crashed, killed, or cut off from Redis. GET /admin/instances (or the dashboard's Instances section) names them and their last heartbeat.",
  }),
  prometheusOnly('critical', {
    alert: 'IdpoolInstancesDisagreeOnEpoch',
    note: `Alive instances seeing different Redis epochs (run_id:master_replid):
during a failover each reconnects within seconds; past 30 s one is
still serving from another master (a Sentinel split, a stale address)
while the others serve from the new one.`,
    expr: 'max by (job) (idpool_instances_disagree{on="epoch"}) > 0',
    for: '30s',
    summary: 'idpool instances of {{ $labels.job }} see different Redis epochs',
    description:
      'The alive instances of {{ $labels.job }} have seen more than one Redis epoch for 30 s: at least one is connected to another Redis master than the rest. GET /admin/instances flags which (disagrees: epoch); restart it or fix its Redis address.',
  }),
  // Events only idpool sees (no metric tells them apart).
  { alarm: 'fence_refused', severity: 'warning' },
  { alarm: 'pool_discarded', severity: 'warning' },
  { alarm: 'redis_epoch_changed', alias: 'redis_server_changed', severity: 'critical' },
] as const satisfies readonly AlarmRow[];

type Row = (typeof ALARM_TABLE)[number];

/** Every alarm idpool raises, and former names kept as aliases; the name is stable (logs, webhook, metrics). */
export type AlarmName = Extract<Row, { alarm: string }>['alarm'] | Extract<Row, { alias: string }>['alias'];

const rowOf = new Map<string, AlarmRow>(ALARM_TABLE.flatMap((row: AlarmRow) => (row.alarm ? [[row.alarm, row]] : [])));

const severityOf = (name: AlarmName): AlarmSeverity => rowOf.get(name)?.severity ?? 'warning';

/** The alarm's former name, for one release after a rename. */
export const aliasOf = (name: AlarmName): AlarmName | undefined => rowOf.get(name)?.alias as AlarmName | undefined;

/** An alarm of this name, with its severity from the table. */
export const raised = <T extends object>(name: AlarmName, alarm: T) => ({ name, severity: severityOf(name), ...alarm });
