/**
 * What an OpenAPI document promises, as a set of lines: every (path, method,
 * status), every field path of each response body and request body, and
 * every parameter and operationId. `openapi-sets.test.ts` keeps today's set (a baseline file)
 * and fails when the served document drops one.
 */
type Schema = Record<string, any>;

export function documentSet(doc: Schema): string[] {
  const out = new Set<string>();
  const resolve = (s: Schema): Schema => {
    let schema = s;
    while (typeof schema.$ref === 'string') schema = doc.components.schemas[schema.$ref.split('/').pop()!];
    return schema;
  };
  const fields = (s: Schema | undefined, at: string, prefix: string, seen: string[] = []): void => {
    if (!s || typeof s !== 'object') return;
    if (typeof s.$ref === 'string') {
      if (seen.includes(s.$ref)) return;
      seen = [...seen, s.$ref];
    }
    const schema = resolve(s);
    for (const list of ['allOf', 'anyOf', 'oneOf'])
      for (const part of (schema[list] as Schema[] | undefined) ?? []) fields(part, at, prefix, seen);
    for (const [name, sub] of Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {})) {
      out.add(`${at} ${prefix}${name}`);
      fields(sub, at, `${prefix}${name}.`, seen);
    }
    if (schema.items) fields(schema.items, at, `${prefix}[].`, seen);
    if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
      fields(schema.additionalProperties, at, `${prefix}*.`, seen);
  };
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const at = `${method.toUpperCase()} ${path}`;
      out.add(at);
      out.add(`${at} operationId ${op.operationId}`);
      for (const p of (op.parameters as Schema[] | undefined) ?? []) out.add(`${at} parameter ${p.in}:${p.name}`);
      for (const [type, media] of Object.entries((op.requestBody?.content as Record<string, Schema> | undefined) ?? {}))
        fields(media.schema, `${at} request ${type}`, '');
      for (const [status, response] of Object.entries(op.responses as Record<string, Schema>)) {
        out.add(`${at} ${status}`);
        for (const header of Object.keys(response.headers ?? {})) out.add(`${at} ${status} header ${header}`);
        for (const [type, media] of Object.entries((response.content as Record<string, Schema> | undefined) ?? {}))
          fields(media.schema, `${at} ${status} ${type}`, '');
      }
    }
  }
  return [...out].sort();
}
