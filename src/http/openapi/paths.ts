import { E, type Schema, admin, appSecret, json, keyParam, ref, retryAfter } from './parts';

// The document's `paths`, one function per route group (as src/http/routes).

/** Every path, in the order the document lists them. */
export function apiPaths(): Record<string, Schema> {
  return { ...idPaths(), ...adminListPaths(), ...adminEntityPaths(), ...adminOpsPaths(), ...dashboardPaths(), ...probePaths() };
}

/** The client API, behind the entity's secret. */
function idPaths(): Record<string, Schema> {
  return {
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
  };
}

/** `/admin/apps`: register an entity, list them a page at a time. */
function adminListPaths(): Record<string, Schema> {
  return {
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
  };
}

/** One entity: show, change, retire, rotate its secret. */
function adminEntityPaths(): Record<string, Schema> {
  return {
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
  };
}

/** Worker leases and the dashboard's overview, behind the admin token. */
function adminOpsPaths(): Record<string, Schema> {
  return {
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
  };
}

/** The dashboard's page and assets, open (they hold no data). */
function dashboardPaths(): Record<string, Schema> {
  return {
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
  };
}

/** Liveness, readiness, metrics and this document. */
function probePaths(): Record<string, Schema> {
  return {
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
  };
}
