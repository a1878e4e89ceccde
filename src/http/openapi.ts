import { z } from 'zod';
import { LIMITS, registerSchema, updateSchema } from '../entities/entity';

/**
 * The OpenAPI 3.1 document served at `GET /openapi.json`. Request bodies are
 * generated from the same zod schemas that validate them (`z.toJSONSchema`),
 * so they cannot drift; responses are written here and kept true by
 * `test/integration/openapi.test.ts`, which checks real responses of every
 * route against this document and fails on a route missing from it.
 */

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

function fromZod(schema: z.ZodType): Schema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Schema;
  return rest;
}

const decimalId = { type: 'string', pattern: '^\\d{1,20}$', description: 'A 64-bit id as a decimal string (JSON numbers lose precision above 2^53).' };
const isoDate = { type: 'string', format: 'date-time' };
const nullableNumber = { type: ['number', 'null'] };

const schemas: Record<string, Schema> = {
  Error: {
    type: 'object',
    required: ['error'],
    additionalProperties: false,
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        additionalProperties: false,
        properties: {
          code: { type: 'string', enum: ['invalid_request', 'unauthorized', 'not_found', 'conflict', 'payload_too_large', 'rate_limited', 'pool_exhausted', 'unavailable', 'internal'] },
          message: { type: 'string' },
        },
      },
    },
  },
  TakeRequest: {
    type: 'object',
    additionalProperties: false,
    properties: { count: { type: 'integer', minimum: 1, maximum: LIMITS.maxSizePerTimes, default: 1, description: 'At most the entity maxSizePerTimes.' } },
  },
  Ids: {
    type: 'object',
    required: ['ids'],
    additionalProperties: false,
    properties: { ids: { type: 'array', minItems: 1, items: decimalId } },
  },
  DecodedId: {
    type: 'object',
    required: ['id', 'timestamp', 'worker', 'timeBack', 'sequence', 'reserved'],
    description: 'The parts of a snowflake id; further explanatory fields (such as the time as a date) may be present.',
    properties: {
      id: decimalId,
      timestamp: { type: ['integer', 'string'] },
      worker: { type: 'integer', minimum: 0 },
      timeBack: { type: 'integer', enum: [0, 1] },
      sequence: { type: 'integer', minimum: 0 },
      reserved: { type: 'integer', minimum: 0 },
    },
  },
  RegisterRequest: fromZod(registerSchema),
  UpdateRequest: fromZod(updateSchema),
  AppFields: {
    type: 'object',
    description: 'Fields shared by App and RegisteredApp (no additional-property rule here, so both can close it).',
    required: ['key', 'name', 'mode', 'startOffset', 'step', 'maxSizePerTimes', 'maxSizePerSecond', 'minSizePercent', 'maxPoolSize', 'interval', 'createTime', 'updateTime', 'currentOffset'],
    properties: {
      key: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
      name: { type: 'string' },
      mode: { type: 'string', enum: ['monotonic', 'trend', 'snowflake'] },
      startOffset: decimalId,
      step: { type: 'integer', minimum: 1 },
      maxSizePerTimes: { type: 'integer', minimum: 1 },
      maxSizePerSecond: { type: 'integer', minimum: 0 },
      minSizePercent: { type: 'integer', minimum: 1, maximum: 99 },
      maxPoolSize: { type: 'integer', minimum: 1 },
      interval: { type: 'integer', description: 'least ms between two refill checks of this entity (default: the refill tick)' },
      createTime: isoDate,
      updateTime: isoDate,
      currentOffset: { anyOf: [decimalId, { type: 'null' }], description: 'Next unreserved number of the line.' },
      pool: {
        type: 'object',
        description: 'Segment entities only.',
        required: ['size', 'target', 'max', 'lowWatermark'],
        additionalProperties: false,
        properties: { size: { type: 'integer', minimum: 0 }, target: { type: 'integer', minimum: 1 }, max: { type: 'integer' }, lowWatermark: { type: 'integer' } },
      },
    },
  },
  App: { allOf: [ref('AppFields')], unevaluatedProperties: false },
  RegisteredApp: {
    allOf: [ref('AppFields')],
    required: ['secret'],
    properties: { secret: { type: 'string', description: 'Shown once; send as `Authorization: Bearer <secret>`.' } },
    unevaluatedProperties: false,
  },
  Secret: { type: 'object', required: ['secret'], additionalProperties: false, properties: { secret: { type: 'string' } } },
  Worker: {
    type: 'object',
    required: ['workerId', 'code', 'heartbeatAt', 'lastTimestamp', 'live'],
    properties: {
      workerId: { type: 'integer', minimum: 0 },
      code: { type: ['string', 'null'] },
      heartbeatAt: { anyOf: [isoDate, { type: 'null' }] },
      lastTimestamp: { type: ['integer', 'string', 'null'] },
      live: { type: 'boolean' },
    },
  },
  Health: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { const: 'ok' } } },
  Readiness: {
    type: 'object',
    required: ['status', 'checks'],
    additionalProperties: false,
    properties: {
      status: { type: 'string', enum: ['ready', 'not_ready'] },
      reason: { type: 'string', description: 'Why not ready (present on 503).' },
      checks: { type: 'object', additionalProperties: { type: 'string' }, description: '"ok" or what failed, per dependency.' },
    },
  },
  Alarm: {
    type: 'object',
    required: ['name', 'severity', 'message', 'at', 'status', 'notified'],
    properties: {
      name: { type: 'string' },
      severity: { type: 'string', enum: ['warning', 'critical'] },
      entityKey: { type: 'string' },
      message: { type: 'string' },
      details: { type: 'object' },
      at: isoDate,
      status: { type: 'string', enum: ['firing', 'resolved'] },
      notified: { type: 'boolean' },
    },
  },
  EntityOverview: {
    type: 'object',
    required: ['key', 'mode', 'pool', 'currentOffset', 'highestId', 'takePerSecond', 'reservePerSecond', 'forecast', 'history'],
    additionalProperties: false,
    properties: {
      key: { type: 'string' },
      mode: { type: 'string', enum: ['monotonic', 'trend'] },
      pool: {
        type: 'object',
        required: ['size', 'target', 'max', 'lowWatermark', 'fillPercent'],
        additionalProperties: false,
        properties: { size: { type: 'integer' }, target: { type: 'integer' }, max: { type: 'integer' }, lowWatermark: { type: 'integer' }, fillPercent: { type: 'number' } },
      },
      currentOffset: decimalId,
      highestId: { anyOf: [decimalId, { type: 'null' }] },
      takePerSecond: { type: 'number', minimum: 0 },
      reservePerSecond: { type: 'number', minimum: 0 },
      forecast: {
        type: 'object',
        description: 'Seconds; null = never at the current rate.',
        required: ['poolDrySeconds', 'jsSafeLimitSeconds', 'int63LimitSeconds'],
        additionalProperties: false,
        properties: { poolDrySeconds: nullableNumber, jsSafeLimitSeconds: nullableNumber, int63LimitSeconds: nullableNumber },
      },
      history: {
        type: 'array',
        items: {
          type: 'object',
          required: ['t', 'size', 'takePerSecond'],
          additionalProperties: false,
          properties: { t: { type: 'integer', description: 'Unix ms' }, size: { type: 'integer' }, takePerSecond: { type: 'number' } },
        },
      },
    },
  },
  SnowflakeEntityOverview: {
    type: 'object',
    required: ['key', 'mode', 'takePerSecond'],
    additionalProperties: false,
    properties: {
      key: { type: 'string' },
      mode: { type: 'string', enum: ['snowflake'] },
      takePerSecond: { type: 'number', minimum: 0, description: 'Ids per second served by the answering instance (each instance makes its own snowflake ids).' },
    },
  },
  OpsOverview: {
    type: 'object',
    required: ['at', 'entityCount', 'matching', 'entities', 'snowflake', 'workers', 'alarms'],
    additionalProperties: false,
    properties: {
      at: isoDate,
      entityCount: { type: 'integer', minimum: 0, description: 'Live entities in all.' },
      matching: { type: 'integer', minimum: 0, description: 'Entities whose key contains `q` (all without it); `entities` lists the busiest of them.' },
      entities: { type: 'array', items: { anyOf: [ref('EntityOverview'), ref('SnowflakeEntityOverview')] }, description: 'Busiest first (take rate), then by key.' },
      snowflake: {
        anyOf: [
          {
            type: 'object',
            required: ['timeExhaustedAt', 'jsSafeLimitAt'],
            additionalProperties: false,
            properties: { timeExhaustedAt: isoDate, jsSafeLimitAt: { anyOf: [isoDate, { type: 'null' }] } },
          },
          { type: 'null' },
        ],
      },
      workers: { type: 'array', items: ref('Worker'), description: 'Live worker leases only.' },
      alarms: {
        type: 'object',
        required: ['active', 'recent'],
        additionalProperties: false,
        properties: { active: { type: 'integer', minimum: 0 }, recent: { type: 'array', items: ref('Alarm') } },
      },
    },
  },
};

const json = (schema: Schema) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json(ref('Error')) });
const retryAfter = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'string' } } };

const E = {
  400: error('Invalid request (`invalid_request`): nothing was changed.'),
  401: error('Missing or wrong bearer token, or (on /apps) an unknown entity key: the two are not told apart (`unauthorized`).'),
  404: error('No such entity or route (`not_found`).'),
  409: error('Key already registered (`conflict`).'),
  413: error('Body larger than 16 kB (`payload_too_large`).'),
  429: { ...error('Over the entity per-second limit, or too many failed authentications from this address (`rate_limited`).'), headers: retryAfter },
  503: { ...error('`pool_exhausted` or `unavailable` (a dependency is down).'), headers: retryAfter },
};

const keyParam = { name: 'key', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' }, description: 'Entity key.' };
const admin = [{ adminToken: [] }];
const appSecret = [{ appSecret: [] }];

/** The document; built once per process. */
export function openApiDocument(version = '0.1.0'): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'idpool',
      version,
      description: 'Unique, increasing 64-bit ids for many services at once. Ids travel as decimal strings. Errors are `{"error": {"code", "message"}}`.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    components: {
      schemas,
      securitySchemes: {
        adminToken: { type: 'http', scheme: 'bearer', description: 'IDPOOL_ADMIN_TOKEN' },
        appSecret: { type: 'http', scheme: 'bearer', description: 'The secret returned when the entity was registered (or rotated).' },
      },
    },
    paths: {
      '/apps/{key}/ids': {
        post: {
          summary: 'Take ids',
          description: 'All or nothing: `count` ids or an error. `monotonic` entities come out strictly increasing.',
          security: appSecret,
          parameters: [
            keyParam,
            { name: 'count', in: 'query', required: false, schema: { type: 'integer', minimum: 1 }, description: 'Alternative to the body.' },
            { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 128 }, description: 'A retry with the same key gets the same ids for a short time.' },
          ],
          requestBody: { required: false, content: json(ref('TakeRequest')) },
          responses: { 200: { description: 'The ids.', content: json(ref('Ids')) }, 400: E[400], 401: E[401], 404: E[404], 409: E[409], 413: E[413], 429: E[429], 503: E[503] },
        },
      },
      '/apps/{key}/ids/{id}': {
        get: {
          summary: 'Explain a snowflake id',
          security: appSecret,
          parameters: [keyParam, { name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { 200: { description: 'Its parts.', content: json(ref('DecodedId')) }, 400: E[400], 401: E[401], 404: E[404] },
        },
      },
      '/admin/apps': {
        post: {
          summary: 'Register an entity',
          security: admin,
          requestBody: { required: true, content: json(ref('RegisterRequest')) },
          responses: { 201: { description: 'Registered; `secret` is shown only here.', content: json(ref('RegisteredApp')) }, 400: E[400], 401: E[401], 409: E[409], 413: E[413], 503: E[503] },
        },
        get: {
          summary: 'List live entities, a page at a time',
          description: 'Entities in key order. Follow `next` (as `after`) until it is null.',
          security: admin,
          parameters: [
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 }, description: 'Entities per page.' },
            { name: 'after', in: 'query', required: false, schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' }, description: 'Start after this key: the `next` of the previous page.' },
          ],
          responses: {
            200: {
              description: 'One page of live entities.',
              content: json({
                type: 'object',
                required: ['apps', 'next'],
                additionalProperties: false,
                properties: { apps: { type: 'array', maxItems: 1000, items: ref('App') }, next: { type: ['string', 'null'], description: 'Key to pass as `after` for the next page; null on the last page.' } },
              }),
            },
            400: E[400],
            401: E[401],
            503: E[503],
          },
        },
      },
      '/admin/apps/{key}': {
        get: {
          summary: 'Show an entity',
          security: admin,
          parameters: [keyParam],
          responses: { 200: { description: 'Its configuration and pool.', content: json(ref('App')) }, 400: E[400], 401: E[401], 404: E[404], 503: E[503] },
        },
        patch: {
          summary: 'Change step, sizes, limits or name',
          security: admin,
          parameters: [keyParam],
          requestBody: { required: true, content: json(ref('UpdateRequest')) },
          responses: { 200: { description: 'The new configuration.', content: json(ref('App')) }, 400: E[400], 401: E[401], 404: E[404], 503: E[503] },
        },
        delete: {
          summary: 'Retire an entity (its ids are never reissued, its key never reused)',
          security: admin,
          parameters: [keyParam],
          responses: { 204: { description: 'Retired.' }, 400: E[400], 401: E[401], 404: E[404], 503: E[503] },
        },
      },
      '/admin/apps/{key}/secret': {
        post: {
          summary: 'Rotate the secret',
          security: admin,
          parameters: [keyParam],
          responses: { 200: { description: 'The new secret (the old one stops working).', content: json(ref('Secret')) }, 400: E[400], 401: E[401], 404: E[404], 503: E[503] },
        },
      },
      '/admin/workers': {
        get: {
          summary: 'Worker leases (snowflake)',
          security: admin,
          responses: { 200: { description: 'Every worker row.', content: json({ type: 'object', required: ['workers'], additionalProperties: false, properties: { workers: { type: 'array', items: ref('Worker') } } }) }, 401: E[401], 503: E[503] },
        },
      },
      '/admin/ops': {
        get: {
          summary: 'Pools, take rates, forecasts, leases and recent alarms (what the dashboard shows)',
          description: 'The busiest `limit` entities, or the busiest of those whose key contains `q`.',
          security: admin,
          parameters: [
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 }, description: 'Entities to show.' },
            { name: 'q', in: 'query', required: false, schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]{0,64}$' }, description: 'Show only entities whose key contains this.' },
          ],
          responses: { 200: { description: 'The overview.', content: json(ref('OpsOverview')) }, 400: E[400], 401: E[401], 404: E[404] },
        },
      },
      '/admin/ui': {
        get: {
          summary: 'Dashboard page',
          description: 'Public HTML shell with no data in it; it asks for the admin token and reads `/admin/ops` with it.',
          responses: { 200: { description: 'HTML.', content: { 'text/html': { schema: { type: 'string' } } } } },
        },
      },
      '/admin/ui/{asset}': {
        get: {
          summary: 'Dashboard script and style',
          parameters: [{ name: 'asset', in: 'path', required: true, schema: { type: 'string', enum: ['dashboard.js', 'dashboard.css'] } }],
          responses: {
            200: { description: 'The asset.', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } },
            404: E[404],
          },
        },
      },
      '/healthz': { get: { summary: 'Liveness: the process answers', responses: { 200: { description: 'Alive.', content: json(ref('Health')) } } } },
      '/readyz': {
        get: {
          summary: 'Readiness: database, Redis and lease usable',
          responses: {
            200: { description: 'Ready.', content: json(ref('Readiness')) },
            503: { description: 'Not ready; `reason` says why.', headers: retryAfter, content: json(ref('Readiness')) },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics, forecasts included',
          responses: { 200: { description: 'Prometheus text format 0.0.4.', content: { 'text/plain': { schema: { type: 'string' } } } }, 401: E[401], 404: E[404], 429: E[429] },
        },
      },
      '/openapi.json': {
        get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1.', content: json({ type: 'object', required: ['openapi', 'paths'] }) } } },
      },
    },
  };
}
