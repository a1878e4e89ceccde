import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { type Service, createService } from '../../src/service';
import { type ServiceParts, serviceParts } from '../../src/service/internals';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, type JsonResponse, call } from '../support/http';
import { testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const OPS_TOKEN = 'test-ops-token-0123456789abcdef0123';

interface Doc {
  openapi: string;
  paths: Record<string, Record<string, any>>;
  components: Record<string, any>;
}

/** Every route express knows, as "METHOD /openapi/{template}". */
function expressRoutes(app: ServiceParts['app']): string[] {
  const out: string[] = [];
  const walk = (stack: any[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) {
          const path = `${prefix}${layer.route.path === '/' && prefix ? '' : layer.route.path}`;
          out.push(`${method.toUpperCase()} ${path.replace(/:(\w+)/g, '{$1}')}`);
        }
      } else if (layer.handle?.stack) {
        walk(
          layer.handle.stack,
          `${prefix}${typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : ''}`,
        );
      }
    }
  };
  walk((app as any).router.stack, '');
  return out.sort();
}

describeWithServices(
  'GET /openapi.json describes every route, and real responses match it (MariaDB + Redis)',
  { mysql: true, redis: true },
  () => {
    let setup: StoreSetup;
    let service: Service;
    let base: string;
    let doc: Doc;
    let ajv: Ajv2020;
    const checked = new Set<string>();

    beforeAll(async () => {
      setup = await mysqlRedisSetup();
      const config = loadConfig({ ...setup.env, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN, IDPOOL_OPS_TOKEN: OPS_TOKEN });
      service = await createService(config, { redisPrefix: testPrefix(), ops: { sampleMs: 100 } });
      base = `http://127.0.0.1:${await service.listen(0)}`;
      const res = await call<Doc>(`${base}/openapi.json`);
      expect(res.status).toBe(200);
      doc = res.body;
      ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats(ajv);
      ajv.addSchema(doc, 'openapi.json');
    });

    afterAll(async () => {
      await service?.stop();
      await setup?.cleanup();
    });

    const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

    /** Asserts that `res` is a documented response of `METHOD template` and its body fits the schema. */
    function conforms(method: string, template: string, res: JsonResponse) {
      const op = doc.paths[template]?.[method.toLowerCase()];
      expect(op, `${method} ${template} is documented`).toBeDefined();
      const documented = op.responses[String(res.status)];
      expect(
        documented,
        `${method} ${template} documents status ${res.status} (body ${JSON.stringify(res.body)?.slice(0, 200)})`,
      ).toBeDefined();
      checked.add(`${method} ${template} ${res.status}`);
      if (!documented.content) {
        expect(res.body).toBeUndefined();
        return;
      }
      const type = (res.headers.get('content-type') ?? '').split(';')[0];
      expect(Object.keys(documented.content), `${method} ${template} ${res.status} content type`).toContain(type);
      if (type !== 'application/json') return;
      const validate = ajv.getSchema(
        `openapi.json#/${pointer('paths', template, method.toLowerCase(), 'responses', String(res.status), 'content', 'application/json', 'schema')}`,
      )!;
      expect(validate, 'schema compiles').toBeDefined();
      const ok = validate(res.body);
      expect(
        ok,
        `${method} ${template} ${res.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(res.body).slice(0, 300)}`,
      ).toBe(true);
      for (const [header] of Object.entries(documented.headers ?? {})) {
        expect(res.headers.get(header), `${method} ${template} ${res.status} sends ${header}`).not.toBeNull();
      }
    }

    const requestSchema = (name: string) => ajv.getSchema(`openapi.json#/components/schemas/${name}`)!;

    it('is OpenAPI 3.1 and lists exactly the routes the app serves', async () => {
      expect(doc.openapi).toBe('3.1.0');
      const documented = Object.entries(doc.paths)
        .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
        .sort();
      expect(documented).toEqual(expressRoutes(serviceParts(service).app));
    });

    it('matches real responses of every route, success and error', async () => {
      const key = uniqueKey('oa');
      const flake = uniqueKey('oaflake');
      const limited = uniqueKey('oalim');
      const admin = { token: ADMIN_TOKEN };

      // Request bodies: what the service accepts fits the schema, what it refuses does not.
      const registerBody = {
        key,
        mode: 'monotonic',
        step: 100,
        maxPoolSize: 2000,
        maxSizePerSecond: 0,
        startOffset: '9007199254740000',
      };
      expect(requestSchema('RegisterRequest')(registerBody)).toBe(true);
      expect(requestSchema('RegisterRequest')({ key, color: 'red' })).toBe(false);
      expect(requestSchema('UpdateRequest')({ name: 'Orders', maxSizePerTimes: 500 })).toBe(true);
      expect(requestSchema('TakeRequest')({ count: 5 })).toBe(true);

      const created = await call(`${base}/admin/apps`, { ...admin, body: registerBody });
      conforms('POST', '/admin/apps', created);
      expect(created.status).toBe(201);
      const secret = created.body.secret as string;
      const flakeRes = await call(`${base}/admin/apps`, { ...admin, body: { key: flake, mode: 'snowflake' } });
      conforms('POST', '/admin/apps', flakeRes);
      const limRes = await call(`${base}/admin/apps`, {
        ...admin,
        body: { key: limited, step: 10, maxPoolSize: 100, maxSizePerTimes: 5, maxSizePerSecond: 5 },
      });
      conforms('POST', '/admin/apps', limRes);
      conforms('POST', '/admin/apps', await call(`${base}/admin/apps`, { ...admin, body: { key, color: 'red' } }));
      conforms('POST', '/admin/apps', await call(`${base}/admin/apps`, { ...admin, body: registerBody }));
      conforms('POST', '/admin/apps', await call(`${base}/admin/apps`, { body: registerBody }));
      conforms(
        'POST',
        '/admin/apps',
        await call(`${base}/admin/apps`, { ...admin, rawBody: JSON.stringify({ key: 'x'.repeat(20_000) }) }),
      );

      // Business numbers: registration, take, decode, raise with a period, PATCH 409, a full period's 503.
      const inv = uniqueKey('oainv');
      const invRes = await call(`${base}/admin/apps`, {
        ...admin,
        body: { key: inv, format: 'I{yyyy}-{seq:1}', step: 3, maxSizePerTimes: 3, maxPoolSize: 30 },
      });
      conforms('POST', '/admin/apps', invRes);
      const invSecret = invRes.body.secret as string;
      const invTake = await call(`${base}/apps/${inv}/ids`, { token: invSecret, body: { count: 3 } });
      conforms('POST', '/apps/{key}/ids', invTake);
      conforms(
        'GET',
        '/apps/{key}/ids/{id}',
        await call(`${base}/apps/${inv}/ids/${invTake.body.ids[0]}`, { token: invSecret }),
      );
      const invShown = await call(`${base}/admin/apps/${inv}`, admin);
      conforms('GET', '/admin/apps/{key}', invShown);
      // Its period's use (NumberPeriod): 3 of the 9 numbers of {seq:1} taken.
      expect(invShown.body.period).toMatchObject({ id: String(new Date().getUTCFullYear()), used: '3', capacity: '9' });
      conforms(
        'PATCH',
        '/admin/apps/{key}',
        await call(`${base}/admin/apps/${inv}`, { ...admin, method: 'PATCH', body: { format: 'J{yyyy}-{seq:1}' } }),
      );
      const year = String(new Date().getUTCFullYear());
      conforms(
        'POST',
        '/admin/apps/{key}/raise',
        await call(`${base}/admin/apps/${inv}/raise`, { ...admin, body: { period: year, seq: 8 } }),
      );
      // One number left: a take of 3 is short (409), the last one is taken, then the period is spent (503).
      const short = await call(`${base}/apps/${inv}/ids`, { token: invSecret, body: { count: 3 } });
      expect(short.body.error.code).toBe('period_short');
      conforms('POST', '/apps/{key}/ids', short);
      expect((await call(`${base}/apps/${inv}/ids`, { token: invSecret, body: { count: 1 } })).status).toBe(200);
      const full = await call(`${base}/apps/${inv}/ids`, { token: invSecret, body: { count: 1 } });
      expect(full.body.error.code).toBe('period_exhausted');
      conforms('POST', '/apps/{key}/ids', full);

      conforms('GET', '/admin/apps', await call(`${base}/admin/apps`, admin));
      conforms('GET', '/admin/apps', await call(`${base}/admin/apps?limit=1&after=${key}`, admin));
      conforms('GET', '/admin/apps', await call(`${base}/admin/apps?limit=0`, admin));
      conforms('GET', '/admin/apps', await call(`${base}/admin/apps`, { token: 'nope' }));
      conforms('GET', '/admin/apps/{key}', await call(`${base}/admin/apps/${key}`, admin));
      const flakeView = await call(`${base}/admin/apps/${flake}`, admin);
      conforms('GET', '/admin/apps/{key}', flakeView);
      // A snowflake entity has no pool: it shows none of its fields (and refuses them on input).
      for (const field of ['step', 'maxPoolSize', 'startOffset', 'currentOffset', 'pool'])
        expect(flakeView.body, field).not.toHaveProperty(field);
      conforms('GET', '/admin/apps/{key}', await call(`${base}/admin/apps/missing_${key}`, admin));
      conforms('GET', '/admin/apps/{key}', await call(`${base}/admin/apps/bad%20key`, admin));
      conforms(
        'PATCH',
        '/admin/apps/{key}',
        await call(`${base}/admin/apps/${key}`, { ...admin, method: 'PATCH', body: { name: 'Orders' } }),
      );
      conforms(
        'PATCH',
        '/admin/apps/{key}',
        await call(`${base}/admin/apps/${key}`, { ...admin, method: 'PATCH', body: { step: -1 } }),
      );
      // The read-only ops token: reads pass, writes get 403.
      conforms('GET', '/admin/apps/{key}', await call(`${base}/admin/apps/${key}`, { token: OPS_TOKEN }));
      const forbidden = await call(`${base}/admin/apps/${key}`, {
        token: OPS_TOKEN,
        method: 'PATCH',
        body: { name: 'Orders' },
      });
      expect(forbidden.status).toBe(403);
      conforms('PATCH', '/admin/apps/{key}', forbidden);

      // Ids: batch, query count, too many, wrong secret, unknown entity, rate limit, snowflake.
      let ok: JsonResponse;
      for (;;) {
        ok = await call(`${base}/apps/${key}/ids`, { token: secret, body: { count: 3 } });
        if (ok.status === 200) break;
        conforms('POST', '/apps/{key}/ids', ok);
        await new Promise((r) => setTimeout(r, 50));
      }
      conforms('POST', '/apps/{key}/ids', ok);
      // Ids above 2^53 stay exact decimal strings.
      expect(BigInt(ok.body.ids[0]) >= 9007199254740000n).toBe(true);
      conforms(
        'POST',
        '/apps/{key}/ids',
        await call(`${base}/apps/${key}/ids?count=2`, { token: secret, method: 'POST' }),
      );
      const form = await call(`${base}/apps/${key}/ids`, {
        token: secret,
        rawBody: 'count=5',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.status).toBe(415);
      conforms('POST', '/apps/{key}/ids', form);
      conforms(
        'POST',
        '/apps/{key}/ids',
        await call(`${base}/apps/${key}/ids`, { token: secret, body: { count: 100_000 } }),
      );
      conforms(
        'POST',
        '/apps/{key}/ids',
        await call(`${base}/apps/${key}/ids`, { token: 'wrong', body: { count: 1 } }),
      );
      conforms(
        'POST',
        '/apps/{key}/ids',
        await call(`${base}/apps/missing_${key}/ids`, { token: secret, body: { count: 1 } }),
      );
      const limSecret = limRes.body.secret;
      let limited429: JsonResponse | undefined;
      for (let i = 0; i < 20 && !limited429; i++) {
        const r = await call(`${base}/apps/${limited}/ids`, { token: limSecret, body: { count: 5 } });
        conforms('POST', '/apps/{key}/ids', r);
        if (r.status === 429) limited429 = r;
      }
      expect(limited429).toBeDefined();
      const flakeSecret = flakeRes.body.secret;
      const flakeIds = await call(`${base}/apps/${flake}/ids`, { token: flakeSecret, body: { count: 2 } });
      conforms('POST', '/apps/{key}/ids', flakeIds);
      expect(flakeIds.status).toBe(200);
      conforms(
        'GET',
        '/apps/{key}/ids/{id}',
        await call(`${base}/apps/${flake}/ids/${flakeIds.body.ids[0]}`, { token: flakeSecret }),
      );
      conforms(
        'GET',
        '/apps/{key}/ids/{id}',
        await call(`${base}/apps/${flake}/ids/not-a-number`, { token: flakeSecret }),
      );
      conforms('GET', '/apps/{key}/ids/{id}', await call(`${base}/apps/${key}/ids/123`, { token: secret }));
      conforms('GET', '/apps/{key}/ids/{id}', await call(`${base}/apps/${flake}/ids/123`, { token: 'wrong' }));

      // Leases: a trend entity's segment, a bad size, a monotonic entity, a wrong secret.
      expect(requestSchema('LeaseRequest')({ size: 10 })).toBe(true);
      expect(requestSchema('LeaseRequest')({ size: 0 })).toBe(false);
      const trend = uniqueKey('oatrend');
      const trendRes = await call(`${base}/admin/apps`, { ...admin, body: { key: trend, mode: 'trend' } });
      const leased = await call(`${base}/apps/${trend}/segments`, { token: trendRes.body.secret, body: { size: 10 } });
      expect(leased.status).toBe(200);
      conforms('POST', '/apps/{key}/segments', leased);
      conforms(
        'POST',
        '/apps/{key}/segments',
        await call(`${base}/apps/${trend}/segments`, { token: trendRes.body.secret, body: { size: 0 } }),
      );
      const refused = await call(`${base}/apps/${key}/segments`, { token: secret, method: 'POST' });
      expect(refused.status).toBe(409);
      conforms('POST', '/apps/{key}/segments', refused);
      conforms(
        'POST',
        '/apps/{key}/segments',
        await call(`${base}/apps/${key}/segments`, { token: 'wrong', method: 'POST' }),
      );

      conforms('GET', '/admin/workers', await call(`${base}/admin/workers`, admin));
      // The ops overview once the sampler has seen the entity.
      let ops: JsonResponse;
      do {
        await new Promise((r) => setTimeout(r, 100));
        ops = await call(`${base}/admin/ops`, admin);
      } while (!ops.body.entities?.some((e: any) => e.key === key && e.history.length >= 2));
      conforms('GET', '/admin/ops', ops);
      conforms('GET', '/admin/ops', await call(`${base}/admin/ops`));
      const flakeOps = await call(`${base}/admin/ops?q=${flake}&limit=5`, admin);
      expect(flakeOps.body.entities).toEqual([{ key: flake, mode: 'snowflake', takePerSecond: expect.any(Number) }]);
      conforms('GET', '/admin/ops', flakeOps);
      conforms('GET', '/admin/ops', await call(`${base}/admin/ops?limit=0`, admin));
      const instances = await call(`${base}/admin/instances`, admin);
      expect(instances.body.instances.length).toBeGreaterThanOrEqual(1);
      conforms('GET', '/admin/instances', instances);
      conforms('GET', '/admin/instances', await call(`${base}/admin/instances`));

      conforms(
        'POST',
        '/admin/apps/{key}/secret',
        await call(`${base}/admin/apps/${key}/secret`, { ...admin, method: 'POST' }),
      );
      conforms(
        'POST',
        '/admin/apps/{key}/secret',
        await call(`${base}/admin/apps/missing_${key}/secret`, { ...admin, method: 'POST' }),
      );
      conforms(
        'POST',
        '/admin/apps/{key}/secret',
        await call(`${base}/admin/apps/${key}/secret`, { ...admin, method: 'POST', body: { keepOldForSeconds: 60 } }),
      );
      conforms(
        'POST',
        '/admin/apps/{key}/raise',
        await call(`${base}/admin/apps/${key}/raise`, {
          ...admin,
          method: 'POST',
          body: { firstId: '9007199254740993' },
        }),
      );
      conforms(
        'POST',
        '/admin/apps/{key}/raise',
        await call(`${base}/admin/apps/${key}/raise`, { ...admin, method: 'POST', body: { firstId: -1 } }),
      );
      const below = await call(`${base}/admin/apps/${key}/raise`, { ...admin, method: 'POST', body: { firstId: '1' } });
      expect(below.status).toBe(409);
      conforms('POST', '/admin/apps/{key}/raise', below);
      conforms(
        'POST',
        '/admin/apps/{key}/raise',
        await call(`${base}/admin/apps/missing_${key}/raise`, { ...admin, method: 'POST', body: { firstId: 1 } }),
      );
      // Held entities and the live cutover: hold, the 503 a take then gets, release; the (empty) live list; finish of an entity not live.
      const held = await call(`${base}/admin/apps/${key}/hold`, {
        ...admin,
        method: 'POST',
        body: { reason: 'checking' },
      });
      expect(held.status).toBe(200);
      conforms('POST', '/admin/apps/{key}/hold', held);
      const released = await call(`${base}/admin/apps/${key}/release`, { ...admin, method: 'POST' });
      expect(released.status).toBe(200);
      conforms('POST', '/admin/apps/{key}/release', released);
      const live = await call(`${base}/admin/live`, admin);
      expect(live.status).toBe(200);
      conforms('GET', '/admin/live', live);
      const notLive = await call(`${base}/admin/apps/${key}/finish`, {
        ...admin,
        method: 'POST',
        body: { firstId: '1' },
      });
      expect(notLive.status).toBe(409);
      conforms('POST', '/admin/apps/{key}/finish', notLive);
      const given = await call(`${base}/admin/apps/${key}/secrets`, {
        ...admin,
        method: 'POST',
        body: { secret: 'a-tinyid-token-0123456789' },
      });
      expect(given.status).toBe(201);
      conforms('POST', '/admin/apps/{key}/secrets', given);
      conforms(
        'POST',
        '/admin/apps/{key}/secrets',
        await call(`${base}/admin/apps/${key}/secrets`, {
          ...admin,
          method: 'POST',
          body: { secret: 'a-tinyid-token-0123456789' },
        }),
      );
      const made = await call(`${base}/admin/apps/${key}/secrets`, {
        ...admin,
        method: 'POST',
        body: { expiresInSeconds: 60 },
      });
      conforms('POST', '/admin/apps/{key}/secrets', made);
      conforms(
        'POST',
        '/admin/apps/{key}/secrets',
        await call(`${base}/admin/apps/${key}/secrets`, { ...admin, method: 'POST', body: { secret: 'short' } }),
      );
      conforms(
        'POST',
        '/admin/apps/{key}/secrets',
        await call(`${base}/admin/apps/${key}/secrets`, { ...admin, method: 'POST', body: {} }),
      );
      conforms(
        'DELETE',
        '/admin/apps/{key}/secrets/{secretId}',
        await call(`${base}/admin/apps/${key}/secrets/${made.body.id}`, { ...admin, method: 'DELETE' }),
      );
      conforms(
        'DELETE',
        '/admin/apps/{key}/secrets/{secretId}',
        await call(`${base}/admin/apps/${key}/secrets/nosuch`, { ...admin, method: 'DELETE' }),
      );
      conforms(
        'DELETE',
        '/admin/apps/{key}',
        await call(`${base}/admin/apps/${limited}`, { ...admin, method: 'DELETE' }),
      );
      conforms(
        'DELETE',
        '/admin/apps/{key}',
        await call(`${base}/admin/apps/${limited}`, { ...admin, method: 'DELETE' }),
      );

      conforms('GET', '/admin/ui', await call(`${base}/admin/ui`));
      conforms('GET', '/admin/ui/{asset}', await call(`${base}/admin/ui/dashboard.js`));
      conforms('GET', '/admin/ui/{asset}', await call(`${base}/admin/ui/dashboard.css`));
      conforms('GET', '/admin/ui/{asset}', await call(`${base}/admin/ui/secrets.txt`));
      conforms('GET', '/docs', await call(`${base}/docs`));
      conforms('GET', '/docs/{asset}', await call(`${base}/docs/init.js`));
      conforms('GET', '/docs/{asset}', await call(`${base}/docs/swagger-ui.css`));
      conforms('GET', '/docs/{asset}', await call(`${base}/docs/index.html`));
      conforms('GET', '/healthz', await call(`${base}/healthz`));
      conforms('GET', '/readyz', await call(`${base}/readyz`));
      conforms('GET', '/metrics', await call(`${base}/metrics`));
      conforms('GET', '/openapi.json', await call(`${base}/openapi.json`));

      // Every route was exercised at least once.
      const exercised = new Set([...checked].map((c) => c.split(' ').slice(0, 2).join(' ')));
      expect([...exercised].sort()).toEqual(expressRoutes(serviceParts(service).app));
      // Success and error statuses alike: 34 distinct (method, route, status) when written.
      expect(checked.size).toBeGreaterThanOrEqual(30);
    });
  },
);
