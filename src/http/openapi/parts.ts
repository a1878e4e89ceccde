import { z } from 'zod';
import { REQUESTS, RESPONSES, entityKey } from './schemas';

// The building blocks the schemas and the paths of the document share.

export type Schema = Record<string, unknown>;

/** A reference to one of the document's named schemas. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * The document's named bodies from their zod schemas: requests as input
 * (what a client may send), responses as output (what the routes answer).
 */
export function componentSchemas(): Record<string, Schema> {
  const responses = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(RESPONSES)) responses.add(schema, { id });
  const { schemas } = z.toJSONSchema(responses, {
    io: 'output',
    target: 'draft-2020-12',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const out: Record<string, Schema> = {};
  for (const [id, schema] of Object.entries(REQUESTS)) out[id] = fromZod(schema);
  for (const [id, schema] of Object.entries(schemas)) out[id] = forClients(schema);
  return out;
}

/** A schema of the document (a parameter's, a request body's) from its zod schema. */
export function fromZod(schema: z.ZodType): Schema {
  return forClients(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }));
}

/**
 * Integers get `format: int32` when their bounds fit 32 bits, else `int64`
 * (zod states the bounds, not the width a client should use; its own
 * ±2^53 bounds are dropped), and defaults move into the description:
 * generated clients (openapi-typescript by default) type a property with a
 * `default` as one the request must carry. Recursive, over every subschema.
 */
function forClients(node: unknown): Schema {
  if (Array.isArray(node)) return node.map(forClients) as unknown as Schema;
  if (typeof node !== 'object' || node === null) return node as Schema;
  const { $schema: _s, $id: _i, default: fallback, ...out } = node as Schema;
  for (const [key, value] of Object.entries(out)) out[key] = forClients(value);
  if (fallback !== undefined && typeof out.type === 'string')
    out.description = `${typeof out.description === 'string' && out.description ? `${out.description} ` : ''}Default: ${JSON.stringify(fallback)}.`;
  if (out.type !== 'integer' || out.format !== undefined) return out;
  if (out.minimum === -Number.MAX_SAFE_INTEGER) delete out.minimum;
  if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  const { minimum, maximum } = out;
  const fits32 =
    typeof minimum === 'number' && typeof maximum === 'number' && minimum >= INT32_MIN && maximum <= INT32_MAX;
  out.format = fits32 ? 'int32' : 'int64';
  return out;
}

/** An integer parameter of known bounds that fits 32 bits. */
export const int32 = (minimum: number, maximum?: number): Schema => ({
  type: 'integer',
  format: 'int32',
  minimum,
  ...(maximum === undefined ? {} : { maximum }),
});

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
  take429: withRetryAfter(
    'Over the entity per-second limit, or too many failed authentications from this address (`rate_limited`).',
  ),
  take503: withRetryAfter(
    'Fewer ids ready than asked for (`pool_exhausted`), a business-number period full until the next one (`period_exhausted`), a snowflake instance whose clock is too far from Redis or the database (`clock_skew`), an entity held until an admin releases it (`entity_held`), or a dependency, the snowflake worker lease, or an earlier request with the same `Idempotency-Key` is not ready (`unavailable`).',
  ),
};

export const keyParam = {
  name: 'key',
  in: 'path',
  required: true,
  schema: fromZod(entityKey),
  description: 'Entity key.',
};
export const admin = [{ adminToken: [] }];
/** Admin reads: the admin token or the read-only ops token. */
export const adminRead = [{ adminToken: [] }, { opsToken: [] }];
export const entitySecret = [{ entitySecret: [] }];
/** Open (the empty requirement) unless the service sets a metrics token; the ops token opens it too. */
export const metricsToken = [{}, { metricsToken: [] }, { opsToken: [] }];
