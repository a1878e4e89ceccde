import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call, register, takeWhenReady } from '../support/http';
import { type Instance, type RedisServer, freePort, startInstance, startRedisServer } from '../support/processes';

/**
 * Issue 48 item 2, what deploy/kubernetes relies on: with IDPOOL_ADMIN_PORT
 * the admin API and the dashboard answer on that port only (the main port
 * answers them 404, the admin port answers nothing else), so a
 * NetworkPolicy can name who reaches them; and `/readyz?shared=degrade`,
 * the readiness probe, stays ready while Redis, which every pod shares, is
 * gone (takes answer 503 with Retry-After), where `/readyz` fails.
 */
describeWithServices('IDPOOL_ADMIN_PORT and /readyz?shared=degrade (private redis-server, SQLite)', {}, () => {
  let dir: string;
  let redis: RedisServer;
  let instance: Instance;
  let admin: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idpool-admin-port-'));
    redis = await startRedisServer('none');
    const adminPort = await freePort();
    admin = `http://127.0.0.1:${adminPort}`;
    instance = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}`,
      IDPOOL_REDIS_URL: redis.url,
      IDPOOL_ADMIN_PORT: String(adminPort),
    });
  });
  afterAll(async () => {
    await instance?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the admin API and dashboard answer on the admin port only; ids and probes on the main port only', async () => {
    const key = uniqueKey('adminport');
    const secret = await register(admin, { key });
    expect((await call(`${admin}/admin/apps/${key}`, { token: ADMIN_TOKEN })).status).toBe(200);
    expect((await fetch(`${admin}/admin/ui/`)).status).toBe(200);
    // The main port: the same requests are 404, with or without the token. A port's refusal is no answer of
    // the route (no operation documents it), so these go by fetch, past the answer check of call().
    const main = instance.url;
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const hidden = await fetch(`${main}/admin/apps/${key}`, { headers: auth });
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const posted = await fetch(`${main}/admin/apps`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ key: `${key}-x` }),
    });
    expect(posted.status).toBe(404);
    expect((await fetch(`${main}/admin/ui/`)).status).toBe(404);
    // Ids and the probes on the main port; none of it on the admin port.
    expect((await takeWhenReady(main, key, secret)).status).toBe(200);
    expect((await call(`${main}/readyz`)).status).toBe(200);
    for (const path of [`/apps/${key}/ids`, '/healthz', '/readyz', '/openapi.json'])
      expect(
        (await fetch(`${admin}${path}`, { method: 'POST', headers: { authorization: `Bearer ${secret}` } })).status,
        path,
      ).toBe(404);
    // The entity registered there is the one served here: one service behind two ports.
    expect(
      (await call(`${admin}/admin/apps`, { token: ADMIN_TOKEN })).body.apps.map((a: { key: string }) => a.key),
    ).toContain(key);
  });

  it('/readyz?shared=degrade stays 200 with Redis gone (degraded: redis), /readyz is 503; takes 503 with Retry-After', async () => {
    const key = uniqueKey('degrade');
    const secret = await register(admin, { key });
    expect((await takeWhenReady(instance.url, key, secret)).status).toBe(200);
    expect((await call(`${instance.url}/readyz?shared=nope`)).status).toBe(400);
    await redis.kill9();
    try {
      const deadline = Date.now() + 10_000;
      let strict = await call(`${instance.url}/readyz`);
      while (strict.status !== 503 && Date.now() < deadline) strict = await call(`${instance.url}/readyz`);
      expect(strict.status).toBe(503);
      const degraded = await call(`${instance.url}/readyz?shared=degrade`);
      expect(degraded.status).toBe(200);
      expect(degraded.body).toMatchObject({ status: 'ready', degraded: expect.arrayContaining(['redis']) });
      expect(degraded.body.checks.redis).not.toBe('ok');
      // Ready, and what it answers meanwhile is a 503 a client retries, not a refused connection.
      const take = await call(`${instance.url}/apps/${key}/ids`, { token: secret, body: { count: 1 } });
      expect(take.status).toBe(503);
      expect(take.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await redis.restart();
    }
  });
});
