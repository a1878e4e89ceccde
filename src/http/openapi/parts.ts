import { z } from 'zod';

// The building blocks the schemas and the paths of the document share.

export type Schema = Record<string, unknown>;

/** A reference to one of the document's named schemas. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** A request body schema generated from the zod schema that validates it, so the two cannot drift. */
export function fromZod(schema: z.ZodType): Schema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Schema;
  return rest;
}

export const decimalId = { type: 'string', pattern: '^\\d{1,20}$', description: 'A 64-bit id as a decimal string (JSON numbers lose precision above 2^53).' };
export const isoDate = { type: 'string', format: 'date-time' };
export const nullableNumber = { type: ['number', 'null'] };

/** A JSON body of this schema. */
export const json = (schema: Schema) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json(ref('Error')) });
export const retryAfter = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'string' } } };

/** The error answers, by status. */
export const E = {
  400: error('Invalid request (`invalid_request`): nothing was changed.'),
  401: error('Missing or wrong bearer token, or (on /apps) an unknown entity key: the two are not told apart (`unauthorized`).'),
  404: error('No such entity or route (`not_found`).'),
  409: error('Key already registered (`conflict`).'),
  413: error('Body larger than 16 kB (`payload_too_large`).'),
  429: { ...error('Over the entity per-second limit, or too many failed authentications from this address (`rate_limited`).'), headers: retryAfter },
  503: { ...error('`pool_exhausted` or `unavailable` (a dependency is down).'), headers: retryAfter },
};

export const keyParam = { name: 'key', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' }, description: 'Entity key.' };
export const admin = [{ adminToken: [] }];
export const appSecret = [{ appSecret: [] }];
