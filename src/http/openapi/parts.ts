import { z } from 'zod';
import { REQUESTS, RESPONSES } from './schemas';

// The document's schemas from zod's: the named bodies, and any other schema paths.ts states by its zod one.

export type Schema = Record<string, unknown>;

/** A reference to one of the document's named schemas. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** The document's named bodies: requests as zod's input (what a client may send), responses as its output. */
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
 * Over every subschema: integers get `format: int32` when their bounds fit, else `int64` (zod states bounds, not a
 * width; its own ±2^53 are dropped), and defaults move into the description: generated clients (openapi-typescript)
 * type a property with a `default` as one the request must carry.
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
    typeof minimum === 'number' && typeof maximum === 'number' && minimum >= -(2 ** 31) && maximum <= 2 ** 31 - 1;
  out.format = fits32 ? 'int32' : 'int64';
  return out;
}
