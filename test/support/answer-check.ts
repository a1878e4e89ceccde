import { readFileSync } from 'node:fs';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { OPENAPI_ENV } from './services';

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

function loadDocument(): Doc {
  const file = process.env[OPENAPI_ENV];
  if (file) return JSON.parse(readFileSync(file, 'utf8')) as Doc;
  // Outside vitest (the chaos run and the benches, run by tsx): built here from the schemas.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { openApiDocument } = require('../../src/http/openapi') as typeof import('../../src/http/openapi');
  return openApiDocument() as unknown as Doc;
}

// Read when a test file loads, not inside the first answer it times. The document is the one the
// service serves (built from the same schemas); ajv checks it against no meta-schema (openapi-lint.test.ts
// lints it), and compiles a response's schema the first time an answer of that route and status comes.
const doc = loadDocument();
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addSchema(doc, 'openapi.json');
const compiled = new Map<string, ValidateFunction | undefined>();

const paramsOf = (template: string) => (template.match(/\{/g) ?? []).length;
/** Each documented path as a pattern, fewest `{params}` first: the first that matches a URL is its route. */
const routes = Object.keys(doc.paths)
  .sort((a, b) => paramsOf(a) - paramsOf(b))
  .map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`),
  }));

/** Origins whose answers are not this release's (a previous release in a rolling upgrade): never checked. */
const otherReleases = new Set<string>();

/** Answers from `baseUrl` are a previous release's, described by its own document, not this one. */
export function answersOfAnotherRelease(baseUrl: string): void {
  otherReleases.add(new URL(baseUrl).origin);
}

/** Throws when a JSON answer of a documented route has a status it does not document or a body its schema refuses. */
export function checkAnswer(
  method: string,
  url: string,
  status: number,
  contentType: string | null,
  body: unknown,
): void {
  const { pathname, origin } = new URL(url);
  if (otherReleases.has(origin)) return;
  const template = routes.find((r) => r.pattern.test(pathname))?.template;
  const operation = template === undefined ? undefined : doc.paths[template][method.toLowerCase()];
  if (!template || !operation || !contentType?.startsWith('application/json')) return;
  const where = `${method} ${template} ${status}`;
  if (!operation.responses[String(status)])
    throw new Error(`${where} is not documented in /openapi.json (body ${JSON.stringify(body)?.slice(0, 300)})`);
  if (!compiled.has(where)) {
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
      `${where}: the answer does not match its schema in /openapi.json: ${ajv.errorsText(validate.errors)} (body ${JSON.stringify(body).slice(0, 500)})`,
    );
}
