import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../src/http/openapi';

/**
 * Checks an answer of idpool against the response schema its route declares
 * (src/http/openapi/schemas.ts, through the document built from them), so
 * every test that talks HTTP through test/support/http.ts also proves the
 * document true. URLs of no documented route (Leaf's and Tinyid's routes, a
 * webhook receiver) pass unchecked.
 */
interface Doc {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
}

let doc: Doc | undefined;
let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction | undefined>();

/** The documented path of `pathname`: the one matching it with the fewest `{params}`. */
function templateOf(paths: Doc['paths'], pathname: string): string | undefined {
  let best: { template: string; params: number } | undefined;
  for (const template of Object.keys(paths)) {
    const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`);
    if (!pattern.test(pathname)) continue;
    const params = (template.match(/\{/g) ?? []).length;
    if (!best || params < best.params) best = { template, params };
  }
  return best?.template;
}

/** Throws when a JSON answer of a documented route has a status it does not document or a body its schema refuses. */
export function checkAnswer(
  method: string,
  url: string,
  status: number,
  contentType: string | null,
  body: unknown,
): void {
  doc ??= openApiDocument() as unknown as Doc;
  const template = templateOf(doc.paths, new URL(url).pathname);
  const operation = template === undefined ? undefined : doc.paths[template][method.toLowerCase()];
  if (!template || !operation || !contentType?.startsWith('application/json')) return;
  const where = `${method} ${template} ${status}`;
  if (!operation.responses[String(status)])
    throw new Error(`${where} is not documented in /openapi.json (body ${JSON.stringify(body)?.slice(0, 300)})`);
  if (!compiled.has(where)) {
    if (!ajv) {
      ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats(ajv);
      ajv.addSchema(doc, 'openapi.json');
    }
    const pointer = [
      'paths',
      template,
      method.toLowerCase(),
      'responses',
      String(status),
      'content',
      'application/json',
      'schema',
    ]
      .map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1'))
      .join('/');
    compiled.set(
      where,
      operation.responses[String(status)].content?.['application/json']
        ? ajv.getSchema(`openapi.json#/${pointer}`)
        : undefined,
    );
  }
  const validate = compiled.get(where);
  if (validate && !validate(body))
    throw new Error(
      `${where}: the answer does not match its schema in /openapi.json: ${ajv!.errorsText(validate.errors)} (body ${JSON.stringify(body).slice(0, 500)})`,
    );
}
