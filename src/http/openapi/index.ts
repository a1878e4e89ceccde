import { apiPaths, apiTags } from './paths';
import { componentSchemas } from './parts';

// Every body comes from a zod schema (schemas.ts), paths.ts lists the operations. The tests check every answer
// they receive against it (test/support/http.ts), and a route missing from it (test/integration/openapi.test.ts).

const bearer = (description: string) => ({ type: 'http', scheme: 'bearer', description });

/** The OpenAPI 3.1 document served at `GET /openapi.json`; built once per process. */
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'idpool',
      version: '0.1.0',
      description:
        'Unique, increasing 64-bit ids for many services at once. Ids travel as decimal strings. Errors are `{"error": {"code", "message"}}`.',
      // Self-hosted: whoever runs the instance answers for it.
      contact: { name: 'The operators of this idpool instance' },
      license: { name: 'MIT', identifier: 'MIT' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    // Relative: the paths are on the instance that served this document.
    servers: [{ url: '/', description: 'The instance that served this document.' }],
    tags: apiTags,
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        adminToken: bearer('IDPOOL_ADMIN_TOKEN'),
        opsToken: bearer('IDPOOL_OPS_TOKEN: read-only, for GET /admin/* and /metrics; writes get 403.'),
        metricsToken: bearer('IDPOOL_METRICS_TOKEN, for /metrics only; /metrics is open when it is unset.'),
        entitySecret: bearer('The secret returned when the entity was registered (or rotated).'),
      },
    },
    paths: apiPaths(),
  };
}
