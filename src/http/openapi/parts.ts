import { z } from 'zod';
import { KEY_PATTERN } from '../../entities/entity';

// The building blocks the schemas and the paths of the document share.

export type Schema = Record<string, unknown>;

/** A reference to one of the document's named schemas. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * A request body schema generated from the zod schema that validates it, so
 * the two cannot drift. Integers get `format: int32` when their bounds fit 32
 * bits, else `int64` (zod states the bounds, not the width a client should use),
 * and defaults move into the description: generated clients (openapi-typescript
 * by default) type a property with a `default` as one the request must carry.
 */
export function fromZod(schema: z.ZodType): Schema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as Schema;
  return forClients(rest);
}

function forClients(schema: Schema): Schema {
  const { default: fallback, ...out } = schema;
  if (out.properties)
    out.properties = Object.fromEntries(
      Object.entries(out.properties as Record<string, Schema>).map(([k, v]) => [k, forClients(v)]),
    );
  for (const list of ['anyOf', 'oneOf', 'allOf'] as const) {
    if (Array.isArray(out[list])) out[list] = (out[list] as Schema[]).map(forClients);
  }
  if (fallback !== undefined)
    out.description = `${typeof out.description === 'string' && out.description ? `${out.description} ` : ''}Default: ${JSON.stringify(fallback)}.`;
  const { type, minimum, maximum, format } = out;
  if (type === 'integer' && format === undefined) {
    const fits32 =
      typeof minimum === 'number' && typeof maximum === 'number' && minimum >= INT32_MIN && maximum <= INT32_MAX;
    out.format = fits32 ? 'int32' : 'int64';
  }
  return out;
}

/** An integer of known bounds that fits 32 bits. */
export const int32 = (minimum: number, maximum?: number, description?: string): Schema => ({
  type: 'integer',
  format: 'int32',
  minimum,
  ...(maximum === undefined ? {} : { maximum }),
  ...(description === undefined ? {} : { description }),
});

/** Unix time in milliseconds. */
export const unixMs = { type: 'integer', format: 'int64', minimum: 0, description: 'Unix time in milliseconds.' };

/** Ids are below 2^63: at most 19 digits. */
export const decimalId = {
  type: 'string',
  pattern: '^[0-9]+$',
  minLength: 1,
  maxLength: 19,
  description: 'A 64-bit id as a decimal string (JSON numbers lose precision above 2^53).',
};
/** An entity key, as the path, the bodies and the query strings carry it. */
export const entityKey = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  pattern: KEY_PATTERN.source,
  description: 'Entity key: 1-64 of A-Z a-z 0-9 _ - .',
};
/** A secret: 32 random bytes, base64url. */
export const secret = { type: 'string', minLength: 43, maxLength: 43, pattern: '^[A-Za-z0-9_-]+$' };
export const isoDate = { type: 'string', format: 'date-time' };
export const nullableNumber = { type: ['number', 'null'] };

/** A JSON body of this schema. */
export const json = (schema: Schema) => ({ 'application/json': { schema } });
export const error = (description: string) => ({ description, content: json(ref('Error')) });
export const retryAfter = {
  'Retry-After': {
    description: 'Whole seconds to wait before retrying.',
    schema: { type: 'integer', format: 'int32', minimum: 1 },
  },
};
const withRetryAfter = (description: string) => ({ ...error(description), headers: retryAfter });

/** The error answers, by status; the `take*` and `entity*` variants say what differs on the id routes. */
export const E = {
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
  raise409: error('The line is already past `firstId` (`conflict`): nothing changed, the pool kept.'),
  lease409: error(
    'The entity is `monotonic` (its ids must come in one global order, which a client issuing ids itself cannot keep), `snowflake`, or issues business numbers (`conflict`).',
  ),
  lease429: withRetryAfter(
    'The lease would pass the entity per-second limit it shares with takes, or too many failed authentications from this address (`rate_limited`).',
  ),
  update409: error(
    'A business-number entity `format`, `reset` or `timeZone` is fixed once registered (`conflict`): register a new entity.',
  ),
  take409: error('This `Idempotency-Key` was used for a request of another count (`conflict`).'),
  take429: withRetryAfter(
    'Over the entity per-second limit, or too many failed authentications from this address (`rate_limited`).',
  ),
  take503: withRetryAfter(
    'Fewer ids ready than asked for (`pool_exhausted`), a business-number period full until the next one (`period_exhausted`), or a dependency, the snowflake worker lease or clock, or an earlier request with the same `Idempotency-Key` is not ready (`unavailable`).',
  ),
};

export const keyParam = { name: 'key', in: 'path', required: true, schema: entityKey, description: 'Entity key.' };
export const admin = [{ adminToken: [] }];
/** Admin reads: the admin token or the read-only ops token. */
export const adminRead = [{ adminToken: [] }, { opsToken: [] }];
export const entitySecret = [{ entitySecret: [] }];
/** Open (the empty requirement) unless the service sets a metrics token; the ops token opens it too. */
export const metricsToken = [{}, { metricsToken: [] }, { opsToken: [] }];
