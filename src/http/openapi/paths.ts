/**
 * The OpenAPI paths, one declarative entry per route: long by nature (each
 * entry is its route's contract, read top to bottom), not by mixed concerns.
 */
import {
  E,
  type Schema,
  admin,
  adminRead,
  entityKey,
  entitySecret,
  error,
  int32,
  json,
  keyParam,
  metricsToken,
  ref,
  retryAfter,
} from './parts';

// The document's `paths`, one function per route group (as src/http/routes).
// Every operation has an `operationId`: generated clients use it as the
// method name, so it never changes once published.

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

/** Every path, in the order the document lists them. */
export function apiPaths(): Record<string, Schema> {
  return {
    ...idPaths(),
    ...gaplessPaths(),
    ...adminListPaths(),
    ...adminEntityPaths(),
    ...adminOpsPaths(),
    ...dashboardPaths(),
    ...probePaths(),
  };
}

/** The client API, behind the entity's secret. */
function idPaths(): Record<string, Schema> {
  return {
    '/apps/{key}/ids': {
      post: {
        operationId: 'takeIds',
        tags: ['ids'],
        summary: 'Take ids',
        description:
          'All or nothing: `count` ids or an error. `monotonic` entities come out strictly increasing. `count` comes from the body or `?count=` (default 1), at most the entity `maxSizePerTimes`.',
        security: entitySecret,
        parameters: [
          keyParam,
          { name: 'count', in: 'query', required: false, schema: int32(1), description: 'Alternative to the body.' },
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            schema: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[\\x20-\\x7e]+$' },
            description: 'Printable ASCII. A retry with the same key gets the same ids for a short time.',
          },
        ],
        requestBody: { required: false, content: json(ref('TakeRequest')) },
        responses: {
          200: {
            description:
              'The ids (with `Idempotent-Replayed: true` when they repeat an earlier answer to the same `Idempotency-Key`).',
            content: json(ref('Ids')),
          },
          400: E[400],
          401: E.entity401,
          404: E[404],
          409: E.take409,
          413: E[413],
          415: E[415],
          429: E.take429,
          503: E.take503,
        },
      },
    },
    '/apps/{key}/segments': {
      post: {
        operationId: 'leaseSegment',
        tags: ['ids'],
        summary: 'Lease a segment',
        description:
          'Reserves a fresh segment of a `trend` entity in the database (never from its pool) for a client that hands out its ids itself, as the SDK leased buffer and Tinyid clients do. Ids of a segment never overlap any other segment, pool or library reservation; a client that stops wastes what it did not hand out, never repeats it.',
        security: entitySecret,
        parameters: [
          keyParam,
          { name: 'size', in: 'query', required: false, schema: int32(1), description: 'Alternative to the body.' },
        ],
        requestBody: { required: false, content: json(ref('LeaseRequest')) },
        responses: {
          200: { description: 'The segment.', content: json(ref('LeasedSegment')) },
          400: E[400],
          401: E.entity401,
          404: E[404],
          409: E.lease409,
          413: E[413],
          415: E[415],
          429: E.lease429,
          503: E[503],
        },
      },
    },
    '/apps/{key}/ids/{id}': {
      get: {
        operationId: 'explainId',
        tags: ['ids'],
        summary: 'Explain a snowflake id or a business number',
        description:
          'The timestamp, worker, sequence and other parts of an id a `snowflake` entity issued, or a business number taken apart (its period and `seq`); 400 for an id this layout or template cannot have made, or an entity of another mode.',
        security: entitySecret,
        parameters: [
          keyParam,
          {
            name: 'id',
            in: 'path',
            required: true,
            schema: { type: 'string', minLength: 1, maxLength: 64 },
            description: 'The id as issued (a decimal string), or a business number (a `/` in it sent as `%2F`).',
          },
        ],
        responses: {
          200: { description: 'Its parts.', content: json({ anyOf: [ref('DecodedId'), ref('DecodedNumber')] }) },
          400: E[400],
          401: E.entity401,
          429: E[429],
          503: E[503],
        },
      },
    },
  };
}

/** `/admin/apps`: register an entity, list them a page at a time. */
function adminListPaths(): Record<string, Schema> {
  return {
    '/admin/apps': {
      post: {
        operationId: 'registerEntity',
        tags: ['admin'],
        summary: 'Register an entity',
        description:
          'Creates the entity and its secret. The secret is in this answer only; store it (rotate it with `rotateSecret` if lost).',
        security: admin,
        requestBody: { required: true, content: json(ref('RegisterRequest')) },
        responses: {
          201: { description: 'Registered; `secret` is shown only here.', content: json(ref('RegisteredEntity')) },
          400: E[400],
          401: E[401],
          403: E[403],
          409: E[409],
          413: E[413],
          415: E[415],
          429: E[429],
          503: E[503],
        },
      },
      get: {
        operationId: 'listEntities',
        tags: ['admin'],
        summary: 'List live entities, a page at a time',
        description: 'Entities in key order. Follow `next` (as `after`) until it is null.',
        security: adminRead,
        parameters: [
          {
            name: 'limit',
            in: 'query',
            required: false,
            schema: { ...int32(1, 1000), default: 100 },
            description: 'Entities per page.',
          },
          {
            name: 'after',
            in: 'query',
            required: false,
            schema: entityKey,
            description: 'Start after this key: the `next` of the previous page.',
          },
        ],
        responses: {
          200: { description: 'One page of live entities.', content: json(ref('EntityPage')) },
          400: E[400],
          401: E[401],
          429: E[429],
          503: E[503],
        },
      },
    },
  };
}

/** One entity: show, change, retire, rotate its secret. */
function adminEntityPaths(): Record<string, Schema> {
  return {
    '/admin/apps/{key}': {
      get: {
        operationId: 'getEntity',
        tags: ['admin'],
        summary: 'Show an entity',
        description: 'Its configuration (never the secret), `currentOffset` and, for segment entities, its pool.',
        security: adminRead,
        parameters: [keyParam],
        responses: {
          200: { description: 'Its configuration and pool.', content: json(ref('Entity')) },
          400: E[400],
          401: E[401],
          404: E[404],
          429: E[429],
          503: E[503],
        },
      },
      patch: {
        operationId: 'updateEntity',
        tags: ['admin'],
        summary: 'Change step, sizes, limits or name',
        description: 'Only the fields given change; the key, mode and start offset are fixed at registration.',
        security: admin,
        parameters: [keyParam],
        requestBody: { required: true, content: json(ref('UpdateRequest')) },
        responses: {
          200: { description: 'The new configuration.', content: json(ref('Entity')) },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: E.update409,
          413: E[413],
          415: E[415],
          429: E[429],
          503: E[503],
        },
      },
      delete: {
        operationId: 'retireEntity',
        tags: ['admin'],
        summary: 'Retire an entity',
        description:
          'A soft delete: the entity stops answering, its ids are never reissued and its key is never reused.',
        security: admin,
        parameters: [keyParam],
        responses: {
          204: { description: 'Retired.' },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/secret': {
      post: {
        operationId: 'rotateSecret',
        tags: ['admin'],
        summary: 'Rotate the secret',
        description:
          'A new secret for the entity. The old ones stop working at once, or after `keepOldForSeconds` so clients can move over.',
        security: admin,
        parameters: [keyParam],
        requestBody: { required: false, content: json(ref('RotateRequest')) },
        responses: {
          200: { description: 'The new secret.', content: json(ref('Secret')) },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: error('The entity would have more secrets than allowed at once (`conflict`).'),
          413: E[413],
          415: E[415],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/raise': {
      post: {
        operationId: 'raiseEntity',
        tags: ['admin'],
        summary: 'Move the number line up',
        description:
          'From now on no id below `firstId` is handed out: the line moves up (never down), the pool is discarded and refilled above it. A `firstId` the line is already past is refused (409) and nothing is discarded. For an import that found the old service issued further (docs/migrating.md). For a business-number entity, `{period, seq}`: no sequence at or below `seq` in that period (docs/numbers.md).',
        security: admin,
        parameters: [keyParam],
        requestBody: {
          required: true,
          content: json({ anyOf: [ref('RaiseRequest'), ref('RaisePeriodRequest')] }),
        },
        responses: {
          200: {
            description: 'The entity after, or the period counter after.',
            content: json({ anyOf: [ref('Entity'), ref('RaisedPeriod')] }),
          },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: E.raise409,
          413: E[413],
          415: E[415],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/release': {
      post: {
        operationId: 'releaseEntity',
        tags: ['admin'],
        summary: 'Serve a held entity again',
        description:
          'Clears `held`. `idpool apps release` first reads the incumbent row once more and raises the line above it (docs/migrating.md).',
        security: admin,
        parameters: [keyParam],
        responses: {
          200: { description: 'The entity after.', content: json(ref('Entity')) },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: error('Not in a live cutover (`conflict`).'),
          413: E[413],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/hold': {
      post: {
        operationId: 'holdEntity',
        tags: ['admin'],
        summary: 'Serve no ids until released',
        description:
          'Every take and lease answers 503 `entity_held` with the reason; the pool is discarded and not refilled.',
        security: admin,
        parameters: [keyParam],
        requestBody: {
          content: json({
            type: 'object',
            additionalProperties: false,
            properties: { reason: { type: 'string', minLength: 1, maxLength: 255 } },
          }),
        },
        responses: {
          200: { description: 'The entity after.', content: json(ref('Entity')) },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: error('Not in a live cutover (`conflict`).'),
          413: E[413],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/finish': {
      post: {
        operationId: 'finishLiveCutover',
        tags: ['admin'],
        summary: 'End a live cutover',
        description:
          "The entity leaves live mode and its line moves up to `firstId` (above the incumbent row's final value), its pool discarded and fenced there: `idpool apps import-from … --finish`.",
        security: admin,
        parameters: [keyParam],
        requestBody: { required: true, content: json(ref('RaiseRequest')) },
        responses: {
          200: { description: 'The entity after.', content: json(ref('Entity')) },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: error('Not in a live cutover (`conflict`).'),
          413: E[413],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/live': {
      get: {
        operationId: 'listLiveCutovers',
        tags: ['admin'],
        summary: 'Entities in a live cutover',
        description:
          "Each live entity's incumbent row, spacing, next unreserved number and the numbers idpool reserved from the row, read now (what `--finish` watches).",
        security: admin,
        responses: {
          200: {
            description: 'The live entities.',
            content: json({
              type: 'object',
              required: ['apps'],
              additionalProperties: false,
              properties: {
                apps: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['key', 'incumbent', 'delta', 'remainder', 'currentOffset', 'reservedFromIncumbent'],
                    additionalProperties: false,
                    properties: {
                      key: { type: 'string' },
                      incumbent: { type: 'object' },
                      delta: { type: 'integer' },
                      remainder: { type: 'integer' },
                      currentOffset: { type: 'string' },
                      reservedFromIncumbent: { type: 'string' },
                    },
                  },
                },
              },
            }),
          },
          401: E[401],
          403: E[403],
          404: E[404],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/secrets': {
      post: {
        operationId: 'addSecret',
        tags: ['admin'],
        summary: 'Accept one more secret',
        description:
          'A secret given (an imported Tinyid token) or made here, stored hashed, optionally until it expires. A secret the entity already accepts is not added twice (200).',
        security: admin,
        parameters: [keyParam],
        requestBody: { required: false, content: json(ref('AddSecretRequest')) },
        responses: {
          200: { description: 'Already accepted; nothing changed.', content: json(ref('AddedSecret')) },
          201: { description: 'Added; `secret` is shown only when made here.', content: json(ref('AddedSecret')) },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: error('The entity already has as many secrets as allowed (`conflict`).'),
          413: E[413],
          415: E[415],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/secrets/{secretId}': {
      delete: {
        operationId: 'removeSecret',
        tags: ['admin'],
        summary: 'Stop accepting one secret',
        description: 'Stops the secret on every instance at once. The last secret cannot be removed: rotate it.',
        security: admin,
        parameters: [
          keyParam,
          {
            name: 'secretId',
            in: 'path',
            required: true,
            schema: { type: 'string', pattern: '^[A-Za-z0-9]{1,32}$' },
            description: 'The `id` of the secret, as the entity view lists it.',
          },
        ],
        responses: {
          204: { description: 'Removed.' },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: error('The only secret of the entity (`conflict`).'),
          429: E[429],
          503: E[503],
        },
      },
    },
  };
}

/** Worker leases and the dashboard's overview, behind the admin token. */
function adminOpsPaths(): Record<string, Schema> {
  return {
    '/admin/workers': {
      get: {
        operationId: 'listWorkers',
        tags: ['ops'],
        summary: 'Worker leases (snowflake)',
        description: 'Every worker row: which instance holds each worker id, its last heartbeat and last timestamp.',
        security: adminRead,
        responses: {
          200: { description: 'Every worker row.', content: json(ref('WorkerList')) },
          401: E[401],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/ops': {
      get: {
        operationId: 'opsOverview',
        tags: ['ops'],
        summary: 'Pools, take rates, forecasts, leases and recent alarms',
        description:
          'What the dashboard shows: the busiest `limit` entities, or the busiest of those whose key contains `q`. 404 when the overview is not enabled.',
        security: adminRead,
        parameters: [
          {
            name: 'limit',
            in: 'query',
            required: false,
            schema: { ...int32(1, 1000), default: 50 },
            description: 'Entities to show.',
          },
          {
            name: 'q',
            in: 'query',
            required: false,
            schema: { type: 'string', maxLength: 64, pattern: '^[A-Za-z0-9_.-]*$' },
            description: 'Show only entities whose key contains this.',
          },
        ],
        responses: {
          200: { description: 'The overview.', content: json(ref('OpsOverview')) },
          400: E[400],
          401: E[401],
          404: E[404],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/instances': {
      get: {
        operationId: 'listInstances',
        tags: ['ops'],
        summary: 'The instances of the fleet: versions, worker ids, Redis epochs, heartbeats',
        description:
          "Every instance's heartbeat (published to Redis every second, with a TTL): alive, or gone once past its TTL (then dropped), and whether the alive ones disagree on the Redis epoch or the version. When Redis does not answer within 500 ms, this instance only, `source: local` with a `note`.",
        security: adminRead,
        responses: {
          200: { description: 'The instances.', content: json(ref('Instances')) },
          401: E[401],
          404: E[404],
          429: E[429],
        },
      },
    },
  };
}

/** The dashboard's page and assets, open (they hold no data). */
function dashboardPaths(): Record<string, Schema> {
  return {
    '/admin/ui': {
      get: {
        operationId: 'dashboardPage',
        tags: ['ops'],
        summary: 'Dashboard page',
        description:
          'Public HTML shell with no data in it; it asks for the ops (or admin) token and reads `/admin/ops` with it.',
        responses: { 200: { description: 'HTML.', content: { 'text/html': { schema: { type: 'string' } } } } },
      },
    },
    '/admin/ui/{asset}': {
      get: {
        operationId: 'dashboardAsset',
        tags: ['ops'],
        summary: 'Dashboard script and style',
        description: "The dashboard page's script and style sheet, public as the page is.",
        parameters: [
          {
            name: 'asset',
            in: 'path',
            required: true,
            schema: { type: 'string', enum: ['dashboard.js', 'dashboard.css'] },
            description: 'File name.',
          },
        ],
        responses: {
          200: {
            description: 'The asset.',
            content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } },
          },
          404: E[404],
        },
      },
    },
  };
}

/** Liveness, readiness, metrics and this document. */
function probePaths(): Record<string, Schema> {
  return {
    '/healthz': {
      get: {
        operationId: 'healthz',
        tags: ['ops'],
        summary: 'Liveness: the process answers',
        description: 'Always 200 while the process runs; it checks no dependency (that is `/readyz`).',
        responses: { 200: { description: 'Alive.', content: json(ref('Health')) } },
      },
    },
    '/readyz': {
      get: {
        operationId: 'readyz',
        tags: ['ops'],
        summary: 'Readiness: database, Redis and lease usable',
        description:
          "Each dependency checked, failures reduced to their kind (no connection strings). 503 while the database, Redis or the lease is unusable or the process shuts down; a live cutover's incumbent database is reported in `degraded`, never a 503.",
        responses: {
          200: { description: 'Ready.', content: json(ref('Readiness')) },
          503: { description: 'Not ready; `reason` says why.', headers: retryAfter, content: json(ref('Readiness')) },
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        tags: ['ops'],
        summary: 'Prometheus metrics, forecasts included',
        description:
          'Per-entity series for the most active entities, totals for all. Behind `IDPOOL_METRICS_TOKEN` when it is set; 404 when metrics are not enabled.',
        security: metricsToken,
        responses: {
          200: {
            description: 'Prometheus text format 0.0.4.',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          401: E[401],
          404: E[404],
          429: E[429],
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openapi',
        tags: ['ops'],
        summary: 'This document',
        description: 'The OpenAPI 3.1 description of every route, public; generate a client from it.',
        responses: {
          200: { description: 'OpenAPI 3.1.', content: json({ type: 'object', required: ['openapi', 'paths'] }) },
        },
      },
    },
  };
}

/** A gapless series' ledger (docs/numbers.md "Gapless series"): behind the entity's secret, its reconcile behind the admin token. */
function gaplessPaths(): Record<string, Schema> {
  const period = {
    name: 'period',
    in: 'query',
    required: false,
    schema: { type: 'string', pattern: '^([0-9]{4,10}|all)$' },
    description: "The period (20261128 for a daily series); default: now's, by the database's clock.",
  };
  const format = {
    name: 'format',
    in: 'query',
    required: false,
    schema: { type: 'string', enum: ['json', 'csv'] },
    description: 'csv (or `Accept: text/csv`): the whole period as CSV.',
  };
  const csv = { 'text/csv': { schema: { type: 'string' } } };
  const notGapless = error('The entity is not a gapless series (`conflict`).');
  return {
    '/apps/{key}/numbers/{number}/void': {
      post: {
        operationId: 'voidNumber',
        tags: ['ids'],
        summary: 'Void a number of a gapless series',
        description:
          'Marks an issued number void with a reason; it stays in the ledger and is never issued again. Voiding it again changes nothing and answers the row (the first reason kept).',
        security: entitySecret,
        parameters: [
          keyParam,
          { name: 'number', in: 'path', required: true, schema: { type: 'string', minLength: 1 } },
        ],
        requestBody: { required: true, content: json(ref('VoidRequest')) },
        responses: {
          200: { description: 'The ledger row.', content: json(ref('LedgerEntry')) },
          400: E[400],
          401: E.entity401,
          404: error('No such number was issued (`not_found`).'),
          409: error('The entity is not a gapless series, or the number was entered lost (`conflict`).'),
          413: E[413],
          415: E[415],
          429: E[429],
          503: E[503],
        },
      },
    },
    '/apps/{key}/numbers/audit': {
      get: {
        operationId: 'auditNumbers',
        tags: ['ids'],
        summary: "A gapless series' audit",
        description:
          'First, last, issued, voided and lost of a period, and its holes and duplicates computed from the ledger (always empty); the whole ledger as CSV with `?format=csv` or `Accept: text/csv`.',
        security: entitySecret,
        parameters: [keyParam, period, format],
        responses: {
          200: { description: 'The audit, or the ledger as CSV.', content: { ...json(ref('LedgerAudit')), ...csv } },
          400: E[400],
          401: E.entity401,
          409: notGapless,
          429: E[429],
          503: E[503],
        },
      },
    },
    '/apps/{key}/numbers': {
      get: {
        operationId: 'listNumbers',
        tags: ['ids'],
        summary: "A gapless series' ledger",
        description:
          'The ledger of a period in sequence order, a page at a time; the whole period as CSV with `?format=csv`.',
        security: entitySecret,
        parameters: [
          keyParam,
          period,
          format,
          { name: 'after', in: 'query', required: false, schema: { type: 'string', pattern: '^[0-9]{1,19}$' } },
          { name: 'limit', in: 'query', required: false, schema: int32(1, 1000), description: 'Default 100.' },
        ],
        responses: {
          200: {
            description: 'A page of the ledger, or the period as CSV.',
            content: { ...json(ref('LedgerPage')), ...csv },
          },
          400: E[400],
          401: E.entity401,
          409: notGapless,
          429: E[429],
          503: E[503],
        },
      },
    },
    '/admin/apps/{key}/numbers/reconcile': {
      post: {
        operationId: 'reconcileNumbers',
        tags: ['admin'],
        summary: 'Reconcile a gapless series after a restore',
        description:
          'Enters the sequences between the ledger and the high-water record as `lost` and moves the counter past them, so issuing goes on above them (`gapless_ledger_behind` ends).',
        security: admin,
        parameters: [keyParam],
        requestBody: { required: false, content: json(ref('ReconcileRequest')) },
        responses: {
          200: { description: 'What was entered.', content: json(ref('Reconciled')) },
          400: E[400],
          401: E[401],
          403: E[403],
          404: E[404],
          409: notGapless,
          413: E[413],
          415: E[415],
          429: E[429],
          503: E[503],
        },
      },
    },
  };
}
