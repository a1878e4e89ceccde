// Writes deploy/grafana/idpool-dashboard.json from the panel table below,
// then the Kubernetes base's copy (scripts/kubernetes-assets.js): `npm run
// dashboard`. With --check it writes nothing and fails while the committed
// file differs (test/integration/grafana-dashboard.test.ts runs that).
// Every panel reads Prometheus through the `datasource` variable; stats show
// the last value against their thresholds, time series draw lines (or bars).
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const FILE = join(__dirname, '..', 'deploy', 'grafana', 'idpool-dashboard.json');
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

const row = (id, title, y) => ({
  id,
  type: 'row',
  title,
  collapsed: false,
  gridPos: { h: 1, w: 24, x: 0, y },
  panels: [],
});

/** The fields every panel has; `targets` are [expr, legendFormat] pairs, lettered A, B, … */
function panel(id, type, title, [x, y, w, h], description, targets, instant, defaults, options) {
  return {
    id,
    type,
    title,
    description,
    gridPos: { h, w, x, y },
    datasource: DATASOURCE,
    targets: targets.map(([expr, legendFormat], i) => ({
      datasource: DATASOURCE,
      refId: String.fromCharCode(65 + i),
      expr,
      legendFormat,
      range: !instant,
      instant,
    })),
    fieldConfig: { defaults, overrides: [] },
    options,
  };
}

/** A stat of the last value; `steps` are the threshold colours from the lowest up, `colour:value` above the first. */
const stat = (id, title, pos, { unit, steps = 'green' }, description, targets) =>
  panel(
    id,
    'stat',
    title,
    pos,
    description,
    targets,
    true,
    {
      unit,
      color: { mode: 'thresholds' },
      thresholds: {
        mode: 'absolute',
        steps: steps.split(' ').map((step) => {
          const [color, value] = step.split(':');
          return { color, value: value === undefined ? null : Number(value) };
        }),
      },
    },
    {
      colorMode: 'value',
      graphMode: 'none',
      justifyMode: 'auto',
      orientation: 'auto',
      textMode: 'auto',
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
    },
  );

/** A time series: lines, or `bars`; `log` for a log-10 axis, `steps` for a step line. */
const graph = (id, title, pos, { unit, bars, log, steps, min, max }, description, targets) =>
  panel(
    id,
    'timeseries',
    title,
    pos,
    description,
    targets,
    false,
    {
      unit,
      color: { mode: 'palette-classic' },
      custom: {
        drawStyle: bars ? 'bars' : 'line',
        lineWidth: 1,
        fillOpacity: bars ? 80 : 10,
        showPoints: 'never',
        spanNulls: false,
        ...(steps ? { lineInterpolation: 'stepAfter' } : {}),
        ...(log ? { scaleDistribution: { type: 'log', log: 10 } } : {}),
      },
      ...(min === undefined ? {} : { min }),
      ...(max === undefined ? {} : { max }),
    },
    {
      legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
      tooltip: { mode: 'multi', sort: 'desc' },
    },
  );

/** A query variable over label values (`selector`'s `label`). */
const labelVariable = (name, label, selector, extra) => ({
  name,
  label,
  type: 'query',
  datasource: DATASOURCE,
  definition: `label_values(${selector}, ${name})`,
  query: {
    qryType: 1,
    query: `label_values(${selector}, ${name})`,
    refId: 'PrometheusVariableQueryEditor-VariableQuery',
  },
  current: {},
  hide: 0,
  ...extra,
  options: [],
  refresh: 2,
  regex: '',
  skipUrlSync: false,
  sort: 1,
});

const PANELS = [
  row(1, 'Fleet', 0),
  stat(
    2,
    'Entities with series',
    [0, 1, 4, 4],
    { unit: 'short' },
    'Entities with per-entity series on these instances (segment pools, and snowflake entities that served ids). Each instance shows at most IDPOOL_METRICS_MAX_ENTITIES, the busiest.',
    [
      [
        'count(count by (entity) (idpool_pool_size{job=~"$job"}) or count by (entity) (idpool_ids_served_total{job=~"$job"}))',
        '__auto',
      ],
    ],
  ),
  stat(
    3,
    'Ids served /s',
    [4, 1, 4, 4],
    { unit: 'short' },
    'Ids handed out by these instances over HTTP (segment and snowflake), every entity.',
    [['sum(rate(idpool_all_ids_served_total{job=~"$job"}[$__rate_interval]))', '__auto']],
  ),
  stat(
    4,
    'Ids taken /s (all consumers)',
    [8, 1, 4, 4],
    { unit: 'short' },
    'Ids taken from the pools by every consumer, direct Redis pops included, as the ops sampler estimates it (each instance reports the same value).',
    [['sum(max by (job) (idpool_all_take_rate_ids_per_second{job=~"$job"}))', '__auto']],
  ),
  stat(
    5,
    'Pools below low watermark',
    [12, 1, 4, 4],
    { unit: 'short', steps: 'green orange:1' },
    'Pools under their low watermark now: a refill is due or under way. Many for long = the refiller is not keeping up.',
    [
      [
        'count(max by (job, entity) (idpool_pool_size{job=~"$job"}) < max by (job, entity) (idpool_pool_low_watermark{job=~"$job"})) or vector(0)',
        '__auto',
      ],
    ],
  ),
  stat(
    6,
    'Alerts firing',
    [16, 1, 4, 4],
    { unit: 'short', steps: 'green red:1' },
    'Alerts of deploy/prometheus/idpool-rules.yml firing now (needs the rules loaded into Prometheus).',
    [['count(ALERTS{alertname=~"Idpool.+", alertstate="firing", job=~"$job"}) or vector(0)', '__auto']],
  ),
  stat(
    7,
    'idpool alarms (1 h)',
    [20, 1, 4, 4],
    { unit: 'short', steps: 'green orange:1' },
    'Alarms idpool raised itself in the last hour (its log and webhook; by name below).',
    [['sum(increase(idpool_alarms_total{job=~"$job"}[1h])) or vector(0)', '__auto']],
  ),
  graph(
    8,
    'Ids served per second, busiest entities',
    [0, 5, 12, 8],
    { unit: 'short' },
    'The 10 entities these instances served most ids to.',
    [['topk(10, sum by (entity) (rate(idpool_ids_served_total{job=~"$job"}[$__rate_interval])))', '{{entity}}']],
  ),
  graph(
    9,
    'Alarms raised',
    [12, 5, 12, 8],
    { unit: 'short', bars: true },
    'idpool alarms by name and severity (pool_low, pool_exhausted, forecasts, lease_lost, …).',
    [
      [
        'sum by (alarm, severity) (increase(idpool_alarms_total{job=~"$job"}[$__rate_interval]))',
        '{{alarm}} ({{severity}})',
      ],
    ],
  ),
  graph(
    10,
    'Pool size / low watermark, lowest 10',
    [0, 13, 12, 8],
    { unit: 'short' },
    'Below 1: the pool is under its low watermark.',
    [
      [
        'bottomk(10, max by (entity) (idpool_pool_size{job=~"$job"}) / max by (entity) (idpool_pool_low_watermark{job=~"$job"} > 0))',
        '{{entity}}',
      ],
    ],
  ),
  graph(
    11,
    'Soonest forecasts over all entities',
    [12, 13, 12, 8],
    { unit: 's', log: true },
    'The soonest pool-dry, 2^53 and 2^63 forecast of any entity (idpool_all_forecast_*). 2^53 reads 0 while any entity is already past it.',
    [
      ['min(idpool_all_forecast_pool_dry_seconds{job=~"$job"})', 'pool dry'],
      ['min(idpool_all_forecast_js_safe_limit_seconds{job=~"$job"})', '2^53'],
      ['min(idpool_all_forecast_int63_limit_seconds{job=~"$job"})', '2^63'],
    ],
  ),
  stat(
    39,
    'Instances alive',
    [0, 21, 4, 5],
    { unit: 'short' },
    'Instances sending heartbeats within IDPOOL_INSTANCE_TTL_MS, as the instances see them (GET /admin/instances lists them).',
    [['max(idpool_instances{job=~"$job", state="alive"})', '__auto']],
  ),
  stat(
    40,
    'Instances gone',
    [4, 21, 4, 5],
    { unit: 'short', steps: 'green red:1' },
    'Instances past their heartbeat TTL without a graceful stop (crashed, killed, cut off from Redis); listed for 30 TTLs, then dropped. Alert: IdpoolInstancesDropped.',
    [['max(idpool_instances{job=~"$job", state="gone"})', '__auto']],
  ),
  stat(
    41,
    'Instances disagree',
    [8, 21, 4, 5],
    { unit: 'short', steps: 'green red:1' },
    '1: the alive instances see more than one Redis epoch (one is on another master; alert IdpoolInstancesDisagreeOnEpoch) or run more than one idpool version.',
    [['max by (on) (idpool_instances_disagree{job=~"$job"})', '{{on}}']],
  ),
  graph(
    42,
    'Instances alive and gone',
    [12, 21, 12, 5],
    { unit: 'short', bars: true },
    'The fleet over time, as its instances see it.',
    [['max by (state) (idpool_instances{job=~"$job"})', '{{state}}']],
  ),
  row(12, 'Entity $entity', 26),
  graph(
    13,
    'Pool of $entity',
    [0, 27, 12, 8],
    { unit: 'short' },
    'Ids ready in its Redis pool, the demand-sized target a refill tops up to, the low watermark that starts a refill, and the ceiling.',
    [
      ['max(idpool_pool_size{job=~"$job", entity="$entity"})', 'size'],
      ['max(idpool_pool_target{job=~"$job", entity="$entity"})', 'target'],
      ['max(idpool_pool_low_watermark{job=~"$job", entity="$entity"})', 'low watermark'],
      ['max(idpool_pool_max{job=~"$job", entity="$entity"})', 'max'],
    ],
  ),
  graph(
    14,
    'Take and reserve rates of $entity',
    [12, 27, 12, 8],
    { unit: 'short' },
    'Taken: by every consumer (sampler estimate). Reserved: numbers fetched from the database. Served: by these instances over HTTP.',
    [
      ['max(idpool_take_rate_ids_per_second{job=~"$job", entity="$entity"})', 'taken (all consumers)'],
      ['max(idpool_reserve_rate_per_second{job=~"$job", entity="$entity"})', 'reserved from the database'],
      [
        'sum(rate(idpool_ids_served_total{job=~"$job", entity="$entity"}[$__rate_interval]))',
        'served by these instances',
      ],
    ],
  ),
  stat(
    15,
    'Pool dry in',
    [0, 35, 4, 4],
    { unit: 's', steps: 'red orange:30 green:60' },
    'Seconds until the pool is empty at the current take rate, without refills.',
    [['min(idpool_forecast_pool_dry_seconds{job=~"$job", entity="$entity"})', '__auto']],
  ),
  stat(
    16,
    'Passes 2^53 in',
    [4, 35, 4, 4],
    { unit: 's', steps: 'red orange:604800 green:2592000' },
    'Until its ids pass 2^53 (unsafe as JavaScript numbers) at the current take rate; 0 = already past.',
    [['min(idpool_forecast_js_safe_limit_seconds{job=~"$job", entity="$entity"})', '__auto']],
  ),
  stat(
    17,
    'Reaches 2^63 in',
    [8, 35, 4, 4],
    { unit: 's', steps: 'red orange:604800 green:2592000' },
    'Until its ids reach the end of the 63-bit number line at the current take rate.',
    [['min(idpool_forecast_int63_limit_seconds{job=~"$job", entity="$entity"})', '__auto']],
  ),
  stat(
    18,
    'Last sampled',
    [12, 35, 4, 4],
    { unit: 's', steps: 'green orange:60 red:300' },
    'Seconds since the ops sampler last read this pool: its gauges and forecasts are that old (stale past two sampling rounds, see Oldest pool sample).',
    [['max(idpool_ops_sample_age_seconds{job=~"$job", entity="$entity"})', '__auto']],
  ),
  stat(19, 'Current offset', [16, 35, 4, 4], { unit: 'none' }, 'Next unreserved number (exact below 2^53).', [
    ['max(idpool_current_offset{job=~"$job", entity="$entity"})', '__auto'],
  ]),
  stat(20, 'Refills /s', [20, 35, 4, 4], { unit: 'short' }, 'Refills of this pool by these instances.', [
    ['sum(rate(idpool_refills_total{job=~"$job", entity="$entity"}[$__rate_interval]))', '__auto'],
  ]),
  graph(
    21,
    'Refused answers for $entity',
    [0, 39, 12, 8],
    { unit: 'reqps' },
    '429 rate_limited (its per-second limit) and 503 pool_exhausted (too few ids after waiting for a refill).',
    [
      ['sum(rate(idpool_rate_limited_total{job=~"$job", entity="$entity"}[$__rate_interval]))', '429 rate_limited'],
      ['sum(rate(idpool_pool_exhausted_total{job=~"$job", entity="$entity"}[$__rate_interval]))', '503 pool_exhausted'],
    ],
  ),
  graph(
    22,
    'Pool dry forecast of $entity',
    [12, 39, 12, 8],
    { unit: 's' },
    'Seconds of ids left at the current take rate, without refills.',
    [['min(idpool_forecast_pool_dry_seconds{job=~"$job", entity="$entity"})', 'pool dry in']],
  ),
  row(23, 'Dependencies and refills', 47),
  graph(
    24,
    'Dependency up',
    [0, 48, 8, 8],
    { unit: 'short', steps: true, min: 0, max: 1 },
    '1 when the instance reached the dependency at its last scrape (the /readyz probe), 0 when not.',
    [['min by (instance, dependency) (idpool_dependency_up{job=~"$job"})', '{{instance}} {{dependency}}']],
  ),
  graph(
    25,
    'Failures and guards',
    [8, 48, 8, 8],
    { unit: 'short' },
    'Failed refills or sweeps and failed pool samples (a dependency error, logged with the entity key), segments refused by the fence, pools discarded and Redis epoch changes (restart, failover, failback).',
    [
      ['sum(rate(idpool_refill_failures_total{job=~"$job"}[$__rate_interval]))', 'refill failures /s'],
      ['sum(rate(idpool_all_ops_sample_failures_total{job=~"$job"}[$__rate_interval]))', 'failed pool samples /s'],
      ['sum(rate(idpool_all_fence_refusals_total{job=~"$job"}[$__rate_interval]))', 'fence refusals /s'],
      ['sum(rate(idpool_all_pools_discarded_total{job=~"$job"}[$__rate_interval]))', 'pools discarded /s'],
      ['sum(increase(idpool_redis_server_changes_total{job=~"$job"}[$__rate_interval]))', 'Redis epoch changes'],
    ],
  ),
  graph(
    26,
    'Refill duration',
    [16, 48, 8, 8],
    { unit: 's' },
    'From reserving a segment to the end of its push, every entity.',
    [
      [
        'histogram_quantile(0.5, sum by (le) (rate(idpool_refill_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))',
        'p50',
      ],
      [
        'histogram_quantile(0.99, sum by (le) (rate(idpool_refill_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))',
        'p99',
      ],
    ],
  ),
  graph(
    27,
    'Oldest pool sample',
    [0, 56, 8, 8],
    { unit: 's' },
    'Seconds since the entity sampled longest ago was read, per instance, and two sampling rounds (stale above): growing = sampling stopped for some entities.',
    [
      ['max by (instance) (idpool_ops_sample_age_max_seconds{job=~"$job"})', '{{instance}}'],
      ['2 * max by (instance) (idpool_ops_sample_round_seconds{job=~"$job"})', '{{instance}} stale above'],
    ],
  ),
  graph(
    28,
    'Worker lease held',
    [8, 56, 8, 8],
    { unit: 'short', steps: true, min: 0, max: 1 },
    '1 while the instance holds a usable snowflake worker lease.',
    [['min by (instance) (idpool_worker_lease_held{job=~"$job"})', '{{instance}}']],
  ),
  graph(
    29,
    'Worker ids leased',
    [16, 56, 8, 8],
    { unit: 'percentunit', min: 0, max: 1 },
    'Share of IDPOOL_WORKER_MIN..MAX with a live lease.',
    [
      [
        'max by (job) (idpool_worker_ids_in_use{job=~"$job"}) / max by (job) (idpool_worker_ids_in_range{job=~"$job"} > 0)',
        '{{job}}',
      ],
    ],
  ),
  graph(
    30,
    'Database reservations',
    [0, 64, 12, 8],
    { unit: 'short' },
    'Segments (steps) and numbers these instances reserved from the database, every entity.',
    [
      ['sum(rate(idpool_all_segments_reserved_total{job=~"$job"}[$__rate_interval]))', 'segments /s'],
      ['sum(rate(idpool_all_numbers_reserved_total{job=~"$job"}[$__rate_interval]))', 'numbers /s'],
    ],
  ),
  stat(
    31,
    'Snowflake layout runs out',
    [12, 64, 12, 4],
    { unit: 'dateTimeAsIso' },
    'When snowflake ids run out of timestamp bits.',
    [['min(idpool_snowflake_time_exhausted_timestamp_seconds{job=~"$job"} > 0) * 1000', '__auto']],
  ),
  stat(
    32,
    'Snowflake ids pass 2^53',
    [12, 68, 12, 4],
    { unit: 'dateTimeAsIso' },
    'From when snowflake ids are unsafe as JavaScript numbers (often already past).',
    [['min(idpool_snowflake_js_safe_limit_timestamp_seconds{job=~"$job"}) * 1000', '__auto']],
  ),
  row(33, 'HTTP', 72),
  graph(
    34,
    'Latency p99 by route',
    [0, 73, 8, 8],
    { unit: 's' },
    '99th percentile of request duration by route template.',
    [
      [
        'histogram_quantile(0.99, sum by (route, le) (rate(idpool_http_request_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))',
        '{{route}}',
      ],
    ],
  ),
  graph(35, 'Latency p50 by route', [8, 73, 8, 8], { unit: 's' }, 'Median request duration by route template.', [
    [
      'histogram_quantile(0.5, sum by (route, le) (rate(idpool_http_request_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))',
      '{{route}}',
    ],
  ]),
  graph(36, 'Requests by status', [16, 73, 8, 8], { unit: 'reqps' }, 'Answers per second by HTTP status.', [
    ['sum by (status) (rate(idpool_http_request_duration_seconds_count{job=~"$job"}[$__rate_interval]))', '{{status}}'],
  ]),
  graph(
    37,
    '5xx ratio',
    [0, 81, 12, 8],
    { unit: 'percentunit', min: 0 },
    'Share of requests answered 5xx, probes (/healthz, /readyz) left out.',
    [
      [
        '(sum(rate(idpool_http_request_duration_seconds_count{job=~"$job", status=~"5..", route!~"/healthz|/readyz"}[$__rate_interval])) or vector(0)) / sum(rate(idpool_http_request_duration_seconds_count{job=~"$job", route!~"/healthz|/readyz"}[$__rate_interval]))',
        '5xx',
      ],
    ],
  ),
  graph(38, 'Requests by route', [12, 81, 12, 8], { unit: 'reqps' }, 'Requests per second by route template.', [
    ['sum by (route) (rate(idpool_http_request_duration_seconds_count{job=~"$job"}[$__rate_interval]))', '{{route}}'],
  ]),
  graph(
    43,
    'Leased ids',
    [0, 89, 24, 8],
    { unit: 'short' },
    'Ids per second in the segments leased to clients that hand out ids themselves (POST /apps/:key/segments, Tinyid nextSegmentId), per entity, and segments leased per second on these instances.',
    [
      ['sum by (entity) (rate(idpool_ids_leased_total{job=~"$job"}[$__rate_interval]))', '{{entity}} ids'],
      ['sum(rate(idpool_all_segments_leased_total{job=~"$job"}[$__rate_interval]))', 'segments (all entities)'],
    ],
  ),
  graph(
    44,
    'Clock skew',
    [0, 97, 24, 8],
    { unit: 's', min: 0 },
    "Each instance's clock against Redis's TIME and the database's (IDPOOL_CLOCK_CHECK_MS): past half of IDPOOL_MAX_CLOCK_SKEW_MS the clock_skew alarm, past it snowflake takes answer 503 clock_skew.",
    [['max by (instance, against) (idpool_clock_skew_seconds{job=~"$job"})', '{{instance}} vs {{against}}']],
  ),
  graph(
    45,
    'Business numbers: period used / capacity',
    [0, 105, 12, 8],
    { unit: 'percentunit', min: 0 },
    "Per business-number entity, the share of its current period's numbers used (handed out or dropped as gaps) against the period's capacity, 10^N - 1 for {seq:N}. At 100 % takes answer 503 period_exhausted until the next period (IdpoolNumberPeriodFull); the sawtooth drops to 0 at each period's start.",
    [
      [
        'max by (entity) (idpool_number_period_used{job=~"$job"}) / max by (entity) (idpool_number_period_capacity{job=~"$job"})',
        '{{entity}}',
      ],
    ],
  ),
  graph(
    46,
    'Business numbers: run out in / period ends in',
    [12, 105, 12, 8],
    { unit: 's', min: 0 },
    "Per business-number entity: seconds until its period's numbers run out at the rate of the last IDPOOL_OPS_PERIOD_RATE_WINDOW_MS (15 min; absent while nothing is taken), seconds until the period ends, and how far into it we are. A run-out line under its end line is the forecast_period_exhausted alarm (IdpoolNumberPeriodExhaustedForecast).",
    [
      [
        'min by (entity) (idpool_forecast_number_period_exhausted_seconds{job=~"$job"} < +Inf)',
        '{{entity}} runs out in',
      ],
      [
        'max by (entity) (idpool_number_period_end_timestamp_seconds{job=~"$job"}) - time()',
        '{{entity}} period ends in',
      ],
      [
        'time() - max by (entity) (idpool_number_period_start_timestamp_seconds{job=~"$job"})',
        '{{entity}} into the period',
      ],
    ],
  ),
];

const dashboard = {
  annotations: {
    list: [
      {
        builtIn: 1,
        datasource: { type: 'grafana', uid: '-- Grafana --' },
        enable: true,
        hide: true,
        iconColor: 'rgba(0, 211, 255, 1)',
        name: 'Annotations & Alerts',
        type: 'dashboard',
      },
    ],
  },
  description:
    'idpool: pools, rates and forecasts per entity, dependencies, HTTP. Rules: deploy/prometheus/idpool-rules.yml.',
  editable: true,
  fiscalYearStartMonth: 0,
  graphTooltip: 1,
  id: null,
  links: [],
  panels: PANELS,
  refresh: '30s',
  schemaVersion: 39,
  tags: ['idpool'],
  templating: {
    list: [
      {
        name: 'datasource',
        label: 'Data source',
        type: 'datasource',
        query: 'prometheus',
        current: {},
        hide: 0,
        includeAll: false,
        multi: false,
        options: [],
        refresh: 1,
        regex: '',
        skipUrlSync: false,
      },
      labelVariable('job', 'Job', 'idpool_worker_lease_held', { includeAll: true, allValue: '.+', multi: true }),
      labelVariable('entity', 'Entity', 'idpool_pool_size{job=~"$job"}', { includeAll: false, multi: false }),
    ],
  },
  time: { from: 'now-6h', to: 'now' },
  timepicker: {},
  timezone: '',
  title: 'idpool',
  uid: 'idpool',
  version: 1,
  weekStart: '',
};

const text = `${JSON.stringify(dashboard, null, 2)}\n`;
if (process.argv.includes('--check')) {
  if (readFileSync(FILE, 'utf8') !== text) {
    console.error(`${FILE} differs from scripts/grafana-dashboard.js: run \`npm run dashboard\``);
    process.exit(1);
  }
} else {
  writeFileSync(FILE, text);
  require('./kubernetes-assets.js');
}
