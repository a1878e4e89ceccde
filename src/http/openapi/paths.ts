import { OPS_DEFAULT_ROWS, PAGE_DEFAULT, PAGE_MAX } from '../params';
import { type Schema, fromZod, ref } from './parts';
import { type BodyName, entityKey, idempotencyKey, opsSearch, secretId } from './schemas';

// One entry per operation, grouped by tag in the tags' order. An `operationId` is a generated client's method name:
// it never changes once published.

/** The tags operations are grouped under, in the order the document lists them. */
export const apiTags = [
  { name: 'ids', description: "Take ids and explain them, behind the entity's secret." },
  { name: 'admin', description: 'Register, list, change and retire entities, behind the admin token.' },
  {
    name: 'ops',
    description:
      'What operators and their tools read: probes, metrics, worker leases, the overview and dashboard, this document.',
  },
];

type Tag = 'ids' | 'admin' | 'ops';

interface Operation {
  operationId: string;
  summary: string;
  description: string;
  /** Besides `key`, which every operation on `/…/{key}` has first. */
  parameters?: Schema[];
  /** The named body (or bodies, any of) a request carries, or one it may come without. */
  body?: BodyName | BodyName[];
  optionalBody?: BodyName;
  /** The successful answers: a description and the named body, if any. */
  ok: Record<number, readonly [string, (BodyName | BodyName[] | null)?, Schema?]>;
  /** The error answers, by their key in {@link E} (its last three digits are the status). */
  errors?: (keyof typeof E)[];
}

const json = (schema: Schema) => ({ 'application/json': { schema } });
const named = (body: BodyName | BodyName[]) => json(Array.isArray(body) ? { anyOf: body.map(ref) } : ref(body));
const error = (description: string) => ({ description, content: json(ref('Error')) });
const retryAfter = {
  'Retry-After': {
    description: 'Whole seconds to wait before retrying.',
    schema: { type: 'integer', format: 'int32', minimum: 1 },
  },
};
const withRetryAfter = (description: string) => ({ ...error(description), headers: retryAfter });

/** The error answers, by status; the `take*` and `entity*` variants say what differs on the id routes. */
const E = {
  400: error('Invalid request (`invalid_request`): nothing was changed.'),
  401: error('Missing or wrong bearer token (`unauthorized`).'),
  403: error('The ops token is read-only: writes need the admin token (`forbidden`).'),
  404: error('No such entity or route (`not_found`).'),
  409: error('Key already registered (`conflict`).'),
  413: error('Body larger than 16 kB (`payload_too_large`).'),
  415: error(
    'A body sent without `Content-Type: application/json` (`unsupported_media_type`): send the JSON with that header, or no body at all.',
  ),
  429: withRetryAfter(
    'Too many failed authentications from this address (`rate_limited`): even a right token is refused, before any compare, until `Retry-After` passes.',
  ),
  503: withRetryAfter('A dependency (database or Redis) is unavailable (`unavailable`).'),
  entity401: error(
    'Missing or wrong secret, or an unknown entity key (`unauthorized`): the two are not told apart, so keys cannot be probed.',
  ),
  raise409: error(
    'The line is already past `firstId`, or a business-number period past `seq` (`conflict`, naming the next number): nothing changed, the pool kept.',
  ),
  lease409: error(
    'The entity is `monotonic` (its ids must come in one global order, which a client issuing ids itself cannot keep), `snowflake`, or issues business numbers (`conflict`).',
  ),
  lease429: withRetryAfter(
    'The lease would pass the entity per-second limit it shares with takes, or too many failed authentications from this address (`rate_limited`).',
  ),
  update409: error(
    'A business-number entity `format`, `reset` or `timeZone` is fixed once registered (`conflict`): register a new entity.',
  ),
  take409: error(
    'This `Idempotency-Key` was used for a request of another count (`conflict`), or a business-number take asked for more than what is left of its period (`period_short`, naming how many are left).',
  ),
  gapless409: error('The entity is not a gapless series, or the number was entered lost (`conflict`).'),
  cutover409: error('Not in a live cutover (`conflict`).'),
  rotate409: error('The entity would have more secrets than allowed at once (`conflict`).'),
  addSecret409: error('The entity already has as many secrets as allowed (`conflict`).'),
  removeSecret409: error('The only secret of the entity (`conflict`).'),
  number404: error('No such number was issued (`not_found`).'),
  take429: withRetryAfter(
    'Over the entity per-second limit, or too many failed authentications from this address (`rate_limited`).',
  ),
  take503: withRetryAfter(
    'Fewer ids ready than asked for (`pool_exhausted`), a business-number period full until the next one (`period_exhausted`), a snowflake instance whose clock is too far from Redis or the database (`clock_skew`), an entity held until an admin releases it (`entity_held`), or a dependency, the snowflake worker lease, or an earlier request with the same `Idempotency-Key` is not ready (`unavailable`).',
  ),
};

const int32 = (minimum: number, maximum?: number): Schema => ({
  type: 'integer',
  format: 'int32',
  minimum,
  ...(maximum === undefined ? {} : { maximum }),
});
const parameter = (where: 'path' | 'query' | 'header') => (name: string, description: string, schema: Schema) => ({
  name,
  in: where,
  required: where === 'path',
  schema,
  description,
});
const path = parameter('path');
const query = parameter('query');
const header = parameter('header');
/** Every operation on `/…/{key}` takes it first. */
const keyParam = path('key', 'Entity key.', fromZod(entityKey));

/** Who may call an operation, as the guards decide (the dashboard's files are open, `/metrics` without its token). */
function securityOf(tag: Tag, method: string, route: string): Schema[] | undefined {
  if (tag === 'ids') return [{ entitySecret: [] }];
  if (route === '/metrics') return [{}, { metricsToken: [] }, { opsToken: [] }];
  if (!route.startsWith('/admin/') || route.startsWith('/admin/ui')) return undefined;
  return method === 'get' ? [{ adminToken: [] }, { opsToken: [] }] : [{ adminToken: [] }];
}

function operation(tag: Tag, method: string, route: string, op: Operation): Schema {
  const { operationId, summary, description, parameters = [], body, optionalBody, ok, errors = [] } = op;
  const security = securityOf(tag, method, route);
  const params = route.includes('{key}') ? [keyParam, ...parameters] : parameters;
  const requested = body ?? optionalBody;
  const answers = Object.entries(ok).map(([status, [description, answer, extra]]) => [
    status,
    { description, ...(answer ? { content: named(answer) } : {}), ...extra },
  ]);
  const failures = errors.map((key) => [String(key).slice(-3), E[key]]);
  return {
    operationId,
    tags: [tag],
    summary,
    description,
    ...(security ? { security } : {}),
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(requested ? { requestBody: { required: !optionalBody, content: named(requested) } } : {}),
    // Integer keys: the statuses come out in numeric order, whatever the lists' order.
    responses: Object.fromEntries([...answers, ...failures]),
  };
}

const text = (...types: string[]) => ({
  content: Object.fromEntries(types.map((type) => [type, { schema: { type: 'string' } }])),
});

/** A period and the CSV form of a gapless series' ledger. */
const LEDGER_QUERY = [
  query('period', "The period (20261128 for a daily series); default: now's, by the database's clock.", {
    type: 'string',
    pattern: '^([0-9]{4,10}|all)$',
  }),
  query('format', 'csv (or `Accept: text/csv`): the whole period as CSV.', { type: 'string', enum: ['json', 'csv'] }),
];
/** A body of the named schema as JSON, or the same ledger as CSV. */
const orCsv = (body: BodyName) => ({ content: { ...json(ref(body)), ...text('text/csv').content } });

const ADMIN_WRITE = [400, 401, 403, 404, 413, 415, 429, 503] as const;
const ADMIN_READ = [400, 401, 404, 429, 503] as const;
/** The answers of a step of a live cutover (hold, release, finish). */
const CUTOVER_STEP: Pick<Operation, 'ok' | 'errors'> = {
  ok: { 200: ['The entity after.', 'Entity'] },
  errors: [400, 401, 403, 404, 'cutover409', 413, 429, 503],
};

/** Every path, in the order the document lists them. */
export function apiPaths(): Record<string, Schema> {
  const paths: Record<string, Schema> = {};
  for (const [tag, operations] of Object.entries(OPERATIONS) as [Tag, Record<string, Operation>][]) {
    for (const [at, op] of Object.entries(operations)) {
      const [method, route] = at.split(' ');
      paths[route] = { ...paths[route], [method]: operation(tag, method, route, op) };
    }
  }
  return paths;
}

const OPERATIONS: Record<Tag, Record<string, Operation>> = {
  ids: {
    'post /apps/{key}/ids': {
      operationId: 'takeIds',
      summary: 'Take ids',
      description:
        'All or nothing: `count` ids or an error. `monotonic` entities come out strictly increasing. `count` comes from the body or `?count=` (default 1), at most the entity `maxSizePerTimes`.',
      parameters: [
        query('count', 'Alternative to the body.', int32(1)),
        header(
          'Idempotency-Key',
          'Printable ASCII. A retry with the same key gets the same ids for a short time.',
          fromZod(idempotencyKey),
        ),
      ],
      optionalBody: 'TakeRequest',
      ok: {
        200: [
          'The ids (with `Idempotent-Replayed: true` when they repeat an earlier answer to the same `Idempotency-Key`).',
          'Ids',
        ],
      },
      errors: [400, 'entity401', 404, 'take409', 413, 415, 'take429', 'take503'],
    },
    'post /apps/{key}/segments': {
      operationId: 'leaseSegment',
      summary: 'Lease a segment',
      description:
        'Reserves a fresh segment of a `trend` entity in the database (never from its pool) for a client that hands out its ids itself, as the SDK leased buffer and Tinyid clients do. Ids of a segment never overlap any other segment, pool or library reservation; a client that stops wastes what it did not hand out, never repeats it.',
      parameters: [query('size', 'Alternative to the body.', int32(1))],
      optionalBody: 'LeaseRequest',
      ok: { 200: ['The segment.', 'LeasedSegment'] },
      errors: [400, 'entity401', 404, 'lease409', 413, 415, 'lease429', 503],
    },
    'get /apps/{key}/ids/{id}': {
      operationId: 'explainId',
      summary: 'Explain a snowflake id or a business number',
      description:
        'The timestamp, worker, sequence and other parts of an id a `snowflake` entity issued, or a business number taken apart (its period and `seq`); 400 for an id this layout or template cannot have made, or an entity of another mode.',
      parameters: [
        path('id', 'The id as issued (a decimal string), or a business number (a `/` in it sent as `%2F`).', {
          type: 'string',
          minLength: 1,
          maxLength: 64,
        }),
      ],
      ok: { 200: ['Its parts.', ['DecodedId', 'DecodedNumber']] },
      errors: [400, 'entity401', 429, 503],
    },
    // A gapless series' ledger (docs/numbers.md "Gapless series"): behind the entity's secret.
    'post /apps/{key}/numbers/{number}/void': {
      operationId: 'voidNumber',
      summary: 'Void a number of a gapless series',
      description:
        'Marks an issued number void with a reason; it stays in the ledger and is never issued again. Voiding it again changes nothing and answers the row (the first reason kept).',
      parameters: [path('number', 'The number as issued.', { type: 'string', minLength: 1 })],
      body: 'VoidRequest',
      ok: { 200: ['The ledger row.', 'LedgerEntry'] },
      errors: [400, 'entity401', 'number404', 'gapless409', 413, 415, 429, 503],
    },
    'get /apps/{key}/numbers/audit': {
      operationId: 'auditNumbers',
      summary: "A gapless series' audit",
      description:
        'First, last, issued, voided and lost of a period, and its holes and duplicates computed from the ledger (always empty); the whole ledger as CSV with `?format=csv` or `Accept: text/csv`.',
      parameters: [...LEDGER_QUERY],
      ok: { 200: ['The audit, or the ledger as CSV.', null, orCsv('LedgerAudit')] },
      errors: [400, 'entity401', 'gapless409', 429, 503],
    },
    'get /apps/{key}/numbers': {
      operationId: 'listNumbers',
      summary: "A gapless series' ledger",
      description:
        'The ledger of a period in sequence order, a page at a time; the whole period as CSV with `?format=csv`.',
      parameters: [
        ...LEDGER_QUERY,
        query('after', 'The `next` of the previous page.', { type: 'string', pattern: '^[0-9]{1,19}$' }),
        query('limit', 'Default 100.', int32(1, PAGE_MAX)),
      ],
      ok: { 200: ['A page of the ledger, or the period as CSV.', null, orCsv('LedgerPage')] },
      errors: [400, 'entity401', 'gapless409', 429, 503],
    },
  },
  admin: {
    'post /admin/apps': {
      operationId: 'registerEntity',
      summary: 'Register an entity',
      description:
        'Creates the entity and its secret. The secret is in this answer only; store it (rotate it with `rotateSecret` if lost).',
      body: 'RegisterRequest',
      ok: { 201: ['Registered; `secret` is shown only here.', 'RegisteredEntity'] },
      errors: [400, 401, 403, 409, 413, 415, 429, 503],
    },
    'get /admin/apps': {
      operationId: 'listEntities',
      summary: 'List live entities, a page at a time',
      description: 'Entities in key order. Follow `next` (as `after`) until it is null.',
      parameters: [
        query('limit', 'Entities per page.', { ...int32(1, PAGE_MAX), default: PAGE_DEFAULT }),
        query('after', 'Start after this key: the `next` of the previous page.', fromZod(entityKey)),
      ],
      ok: { 200: ['One page of live entities.', 'EntityPage'] },
      errors: [400, 401, 429, 503],
    },
    'get /admin/apps/{key}': {
      operationId: 'getEntity',
      summary: 'Show an entity',
      description: 'Its configuration (never the secret), `currentOffset` and, for segment entities, its pool.',
      ok: { 200: ['Its configuration and pool.', 'Entity'] },
      errors: [...ADMIN_READ],
    },
    'patch /admin/apps/{key}': {
      operationId: 'updateEntity',
      summary: 'Change step, sizes, limits or name',
      description: 'Only the fields given change; the key, mode and start offset are fixed at registration.',
      body: 'UpdateRequest',
      ok: { 200: ['The new configuration.', 'Entity'] },
      errors: [...ADMIN_WRITE, 'update409'],
    },
    'delete /admin/apps/{key}': {
      operationId: 'retireEntity',
      summary: 'Retire an entity',
      description: 'A soft delete: the entity stops answering, its ids are never reissued and its key is never reused.',
      ok: { 204: ['Retired.'] },
      errors: [400, 401, 403, 404, 429, 503],
    },
    'post /admin/apps/{key}/secret': {
      operationId: 'rotateSecret',
      summary: 'Rotate the secret',
      description:
        'A new secret for the entity. The old ones stop working at once, or after `keepOldForSeconds` so clients can move over.',
      optionalBody: 'RotateRequest',
      ok: { 200: ['The new secret.', 'Secret'] },
      errors: [...ADMIN_WRITE, 'rotate409'],
    },
    'post /admin/apps/{key}/numbers/reconcile': {
      operationId: 'reconcileNumbers',
      summary: 'Reconcile a gapless series after a restore',
      description:
        'Enters the sequences between the ledger and the high-water record as `lost` and moves the counter past them, so issuing goes on above them (`gapless_ledger_behind` ends).',
      optionalBody: 'ReconcileRequest',
      ok: { 200: ['What was entered.', 'Reconciled'] },
      errors: [...ADMIN_WRITE, 'gapless409'],
    },
    'post /admin/apps/{key}/raise': {
      operationId: 'raiseEntity',
      summary: 'Move the number line up',
      description:
        'From now on no id below `firstId` is handed out: the line moves up (never down), the pool is discarded and refilled above it. A `firstId` the line is already past is refused (409) and nothing is discarded. For an import that found the old service issued further (docs/migrating.md). For a business-number entity, `{period, seq}`: no sequence at or below `seq` in that period (docs/numbers.md).',
      body: ['RaiseRequest', 'RaisePeriodRequest'],
      ok: { 200: ['The entity after, or the period counter after.', ['Entity', 'RaisedPeriod']] },
      errors: [...ADMIN_WRITE, 'raise409'],
    },
    'post /admin/apps/{key}/release': {
      operationId: 'releaseEntity',
      summary: 'Serve a held entity again',
      description:
        'Clears `held`. `idpool apps release` first reads the incumbent row once more and raises the line above it (docs/migrating.md).',
      ...CUTOVER_STEP,
    },
    'post /admin/apps/{key}/hold': {
      operationId: 'holdEntity',
      summary: 'Serve no ids until released',
      description:
        'Every take and lease answers 503 `entity_held` with the reason; the pool is discarded and not refilled.',
      optionalBody: 'HoldRequest',
      ...CUTOVER_STEP,
    },
    'post /admin/apps/{key}/finish': {
      operationId: 'finishLiveCutover',
      summary: 'End a live cutover',
      description:
        "The entity leaves live mode and its line moves up to `firstId` (above the incumbent row's final value), its pool discarded and fenced there: `idpool apps import-from … --finish`.",
      body: 'RaiseRequest',
      ...CUTOVER_STEP,
    },
    'get /admin/live': {
      operationId: 'listLiveCutovers',
      summary: 'Entities in a live cutover',
      description:
        "Each live entity's incumbent row, spacing, next unreserved number and the numbers idpool reserved from the row, read now (what `--finish` watches).",
      ok: { 200: ['The live entities.', 'LiveCutovers'] },
      errors: [401, 403, 404, 429, 503],
    },
    'post /admin/apps/{key}/secrets': {
      operationId: 'addSecret',
      summary: 'Accept one more secret',
      description:
        'A secret given (an imported Tinyid token) or made here, stored hashed, optionally until it expires. A secret the entity already accepts is not added twice (200).',
      optionalBody: 'AddSecretRequest',
      ok: {
        200: ['Already accepted; nothing changed.', 'AddedSecret'],
        201: ['Added; `secret` is shown only when made here.', 'AddedSecret'],
      },
      errors: [...ADMIN_WRITE, 'addSecret409'],
    },
    'delete /admin/apps/{key}/secrets/{secretId}': {
      operationId: 'removeSecret',
      summary: 'Stop accepting one secret',
      description: 'Stops the secret on every instance at once. The last secret cannot be removed: rotate it.',
      parameters: [path('secretId', 'The `id` of the secret, as the entity view lists it.', fromZod(secretId))],
      ok: { 204: ['Removed.'] },
      errors: [400, 401, 403, 404, 'removeSecret409', 429, 503],
    },
  },
  ops: {
    'get /admin/workers': {
      operationId: 'listWorkers',
      summary: 'Worker leases (snowflake)',
      description: 'Every worker row: which instance holds each worker id, its last heartbeat and last timestamp.',
      ok: { 200: ['Every worker row.', 'WorkerList'] },
      errors: [401, 429, 503],
    },
    'get /admin/ops': {
      operationId: 'opsOverview',
      summary: 'Pools, take rates, forecasts, leases and recent alarms',
      description:
        'What the dashboard shows: the busiest `limit` entities, or the busiest of those whose key contains `q`. 404 when the overview is not enabled.',
      parameters: [
        query('limit', 'Entities to show.', { ...int32(1, PAGE_MAX), default: OPS_DEFAULT_ROWS }),
        query('q', 'Show only entities whose key contains this.', fromZod(opsSearch)),
      ],
      ok: { 200: ['The overview.', 'OpsOverview'] },
      errors: [...ADMIN_READ],
    },
    'get /admin/instances': {
      operationId: 'listInstances',
      summary: 'The instances of the fleet: versions, worker ids, Redis epochs, heartbeats',
      description:
        "Every instance's heartbeat (published to Redis every second, with a TTL): alive, or gone once past its TTL (then dropped), and whether the alive ones disagree on the Redis epoch or the version. When Redis does not answer within 500 ms, this instance only, `source: local` with a `note`.",
      ok: { 200: ['The instances.', 'Instances'] },
      errors: [401, 404, 429],
    },
    'get /admin/ui': {
      operationId: 'dashboardPage',
      summary: 'Dashboard page',
      description:
        'Public HTML shell with no data in it; it asks for the ops (or admin) token and reads `/admin/ops` with it.',
      ok: { 200: ['HTML.', null, text('text/html')] },
    },
    'get /admin/ui/{asset}': {
      operationId: 'dashboardAsset',
      summary: 'Dashboard script and style',
      description: "The dashboard page's script and style sheet, public as the page is.",
      parameters: [path('asset', 'File name.', { type: 'string', enum: ['dashboard.js', 'dashboard.css'] })],
      ok: { 200: ['The asset.', null, text('text/javascript', 'text/css')] },
      errors: [404],
    },
    'get /healthz': {
      operationId: 'healthz',
      summary: 'Liveness: the process answers',
      description: 'Always 200 while the process runs; it checks no dependency (that is `/readyz`).',
      ok: { 200: ['Alive.', 'Health'] },
    },
    'get /readyz': {
      operationId: 'readyz',
      summary: 'Readiness: database, Redis and lease usable',
      description:
        "Each dependency checked, failures reduced to their kind (no connection strings). 503 while the database, Redis or the lease is unusable or the process shuts down; a live cutover's incumbent database is reported in `degraded`, never a 503. With `?shared=degrade` (the Kubernetes readiness probe) a failure of what every instance shares (the database, Redis, an incumbent's database, the lease while one of those fails) is reported in `degraded` too, and the instance stays ready: its takes answer 503 with Retry-After meanwhile.",
      parameters: [
        query('shared', 'A shared dependency failing degrades the answer instead of failing it.', {
          type: 'string',
          enum: ['degrade'],
        }),
      ],
      ok: {
        200: ['Ready.', 'Readiness'],
        503: ['Not ready; `reason` says why.', 'Readiness', { headers: retryAfter }],
      },
      errors: [400],
    },
    'get /docs': {
      operationId: 'apiDocs',
      summary: 'This API as a page',
      description:
        'Swagger UI (the pinned `swagger-ui-dist`, served by idpool itself: no CDN) over `/openapi.json`. Public, as that document is.',
      ok: { 200: ['The page.', null, text('text/html')] },
    },
    'get /docs/{asset}': {
      operationId: 'apiDocsAsset',
      summary: "The API page's script and style",
      description: "Swagger UI's script and style sheet, and the page's start-up script.",
      parameters: [
        path('asset', 'File name.', { type: 'string', enum: ['swagger-ui.css', 'swagger-ui-bundle.js', 'init.js'] }),
      ],
      ok: { 200: ['The asset.', null, text('text/javascript', 'text/css')] },
      errors: [404],
    },
    'get /metrics': {
      operationId: 'metrics',
      summary: 'Prometheus metrics, forecasts included',
      description:
        'Per-entity series for the most active entities, totals for all. Behind `IDPOOL_METRICS_TOKEN` when it is set; 404 when metrics are not enabled.',
      ok: { 200: ['Prometheus text format 0.0.4.', null, text('text/plain')] },
      errors: [401, 404, 429],
    },
    'get /openapi.json': {
      operationId: 'openapi',
      summary: 'This document',
      description: 'The OpenAPI 3.1 description of every route, public; generate a client from it.',
      ok: { 200: ['OpenAPI 3.1.', null, { content: json({ type: 'object', required: ['openapi', 'paths'] }) }] },
    },
  },
};
