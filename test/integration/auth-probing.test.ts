import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Service, createService } from '../../src/service';
import { type ServiceParts, serviceParts } from '../../src/service/internals';
import { ADMIN_TOKEN, call, register } from '../support/http';
import { REDIS_URL, createTestSchema, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { inProcessConfig } from '../support/in-process';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Counts the SQL statements a service sends that read entity configuration. */
function countEntityQueries(service: Service): { readonly count: number } {
  const db = serviceParts(service).db;
  const counter = { count: 0 };
  const wrap = <F extends (sql: string, params?: unknown[]) => Promise<unknown>>(fn: F): F =>
    ((sql: string, params?: unknown[]) => {
      // Reads of entity configuration (they select entity_name), not the ops sampler's offsets.
      if (
        sql.includes('entity_name') &&
        /FROM application WHERE (entity_key|update_time|deleted_at = 0 ORDER)/.test(sql)
      )
        counter.count++;
      return fn(sql, params);
    }) as F;
  (db as { query: ServiceParts['db']['query'] }).query = wrap(db.query.bind(db));
  return counter;
}

describeWithServices('key probing (two instances on MariaDB + Redis)', { mysql: true, redis: true }, () => {
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  const services: Service[] = [];
  let a: string;
  let b: string;
  let serviceA: Service;

  beforeAll(async () => {
    schema = await createTestSchema();
    const prefix = testPrefix();
    const config = inProcessConfig({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: REDIS_URL });
    for (let i = 0; i < 2; i++) {
      const service = await createService(config, { redisPrefix: prefix, ops: { requestLog: 'off' } });
      services.push(service);
    }
    serviceA = services[0];
    a = `http://127.0.0.1:${await services[0].listen(0)}`;
    b = `http://127.0.0.1:${await services[1].listen(0)}`;
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await schema?.drop();
  });

  it('an unknown key and a wrong secret get the same 401', async () => {
    const secret = await register(a, { key: 'same401', maxSizePerSecond: 0 });
    expect((await call(`${a}/apps/same401/ids`, { token: secret, body: { count: 1 } })).status).toBe(200);
    const unknown = await call(`${a}/apps/never-registered/ids`, { token: secret, body: { count: 1 } });
    const wrong = await call(`${a}/apps/same401/ids`, { token: `${secret}x`, body: { count: 1 } });
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(unknown.body).toEqual(wrong.body);
    expect(JSON.stringify(unknown.body)).not.toContain('never-registered');
  });

  it('10,000 random keys cost a bounded number of SQL queries, are rate-limited per address, and do not slow a legitimate entity', async () => {
    const secret = await register(a, { key: 'legit', maxSizePerSecond: 0 });
    const legit = async (): Promise<number> => {
      const started = performance.now();
      const res = await call(`${a}/apps/legit/ids`, { token: secret, body: { count: 1 } });
      if (res.status !== 200) throw new Error(`legitimate request got ${res.status} ${JSON.stringify(res.body)}`);
      return performance.now() - started;
    };
    const before: number[] = [];
    for (let i = 0; i < 200; i++) before.push(await legit());

    const queries = countEntityQueries(serviceA);
    const started = Date.now();
    const statuses = new Map<number, number>();
    let retryAfter: string | null = null;
    let probes = 0;
    const probe = async () => {
      while (probes < 10_000) {
        probes++;
        const res = await call(`${a}/apps/k${randomBytes(8).toString('hex')}/ids`, {
          token: randomBytes(32).toString('base64url'),
          body: { count: 1 },
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 429) retryAfter = res.headers.get('retry-after');
      }
    };
    const during: number[] = [];
    let flooding = true;
    const legitLoop = async () => {
      while (flooding) during.push(await legit());
    };
    const legitDone = legitLoop();
    await Promise.all(Array.from({ length: 16 }, probe));
    flooding = false;
    await legitDone;
    const seconds = (Date.now() - started) / 1000;

    process.stderr.write(
      `key probing: ${probes} probes in ${seconds.toFixed(1)} s, statuses ${JSON.stringify(Object.fromEntries(statuses))}, ${queries.count} entity queries; legit median ${median(before).toFixed(2)} ms before, ${median(during).toFixed(2)} ms during (${during.length} requests)\n`,
    );
    expect([...statuses.keys()].every((s) => s === 401 || s === 429)).toBe(true);
    // 30 failures per 10 s window, then 429 with Retry-After.
    expect(statuses.get(401)).toBeLessThanOrEqual(30 * Math.ceil(seconds / 10 + 1));
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // No lookup per key: only the periodic refresh (one a second) touches the table.
    expect(queries.count).toBeLessThanOrEqual(Math.ceil(seconds) + 3);
    // Legitimate requests all succeeded (legit() throws otherwise) and were not held up.
    expect(during.length).toBeGreaterThan(20);
    expect(median(during)).toBeLessThan(Math.max(median(before) * 10, 50));
  }, 300_000);

  it('an entity registered on B right after A saw its key as unknown works on A at once', async () => {
    // A separate address budget is not needed: a valid secret passes even when the address is limited.
    const before = await call(`${a}/apps/late-entity/ids`, { token: 'x'.repeat(43), body: { count: 1 } });
    expect([401, 429]).toContain(before.status);
    const res = await call(`${b}/admin/apps`, {
      token: ADMIN_TOKEN,
      body: { key: 'late-entity', maxSizePerSecond: 0 },
    });
    expect(res.status).toBe(201);
    const after = await call(`${a}/apps/late-entity/ids`, { token: res.body.secret, body: { count: 1 } });
    expect(after.status).toBe(200);
    expect(after.body.ids).toHaveLength(1);
  });
});
