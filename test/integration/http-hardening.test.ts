import { request as httpRequest } from 'node:http';
import { type Socket, connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type PrivateDeployment, privateDeployment } from '../support/private-deployment';
import type { Instance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';
import { commandCalls } from '../support/services';

const OPS_TOKEN = 'test-ops-token-0123456789abcdefghij';
const METRICS_TOKEN = 'test-metrics-token-0123456789';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One request from a chosen loopback address (127.0.0.x are separate clients to the service). */
function callFrom(
  localAddress: string,
  port: number,
  path: string,
  init: { method?: string; token?: string; body?: unknown } = {},
): Promise<Answer> {
  const body = init.body === undefined ? undefined : JSON.stringify(init.body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        localAddress,
        agent: false,
        method: init.method ?? (body === undefined ? 'GET' : 'POST'),
        headers: {
          ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += String(d)));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON (metrics, the dashboard)
          }
          resolve({ status: res.statusCode!, headers: res.headers, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Log lines of the instance that are JSON objects with `field`. */
function jsonLines(instance: Instance, field: string): Record<string, any>[] {
  return instance
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(`"${field}"`))
    .map((l) => JSON.parse(l));
}

describeWithServices('HTTP hardening of a service process (MariaDB + a private Redis)', { mysql: true }, () => {
  let deployment: PrivateDeployment | undefined;
  let instance: Instance;

  beforeAll(async () => {
    deployment = await privateDeployment();
    instance = await deployment.start({ IDPOOL_OPS_TOKEN: OPS_TOKEN, IDPOOL_METRICS_TOKEN: METRICS_TOKEN });
  }, 60_000);

  afterAll(async () => {
    await deployment?.stop();
  });

  it('after 30 wrong admin tokens the right one gets 429 too (not compared); other addresses and entity secrets are unaffected', async () => {
    const key = uniqueKey('throttle');
    const secret = await register(instance.url, { key, maxSizePerSecond: 0 });
    const prober = '127.0.0.3';
    const statuses: number[] = [];
    for (let i = 0; i < 35; i++)
      statuses.push(
        (await callFrom(prober, instance.port, '/admin/apps', { token: `wrong-guess-${i}-0123456789abcdefghij` }))
          .status,
      );
    expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(30).every((s) => s === 429)).toBe(true);

    for (const [path, token] of [
      ['/admin/apps', ADMIN_TOKEN],
      ['/admin/apps', OPS_TOKEN],
      ['/metrics', METRICS_TOKEN],
    ]) {
      const res = await callFrom(prober, instance.port, path, { token });
      expect(res.status, `${path} with the right token`).toBe(429);
      expect(res.body.error.code).toBe('rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // Entity secrets are 256 random bits: still compared, so the entity keeps working from there.
    expect(
      (await callFrom(prober, instance.port, `/apps/${key}/ids`, { token: secret, body: { count: 1 } })).status,
    ).toBe(200);
    // Another address is another client.
    expect((await callFrom('127.0.0.4', instance.port, '/admin/apps', { token: ADMIN_TOKEN })).status).toBe(200);
  });

  it('the ops token reads (dashboard data, GET /admin/*, /metrics) and gets 403 on every write, which changes nothing; every admin write is one audit line', async () => {
    const from = '127.0.0.6';
    const key = uniqueKey('audited');
    const created = await callFrom(from, instance.port, '/admin/apps', {
      token: ADMIN_TOKEN,
      body: { key, maxSizePerSecond: 0 },
    });
    expect(created.status).toBe(201);
    const secrets = [created.body.secret as string];

    for (const path of ['/admin/apps', `/admin/apps/${key}`, '/admin/ops', '/admin/workers', '/metrics']) {
      expect((await callFrom(from, instance.port, path, { token: OPS_TOKEN })).status, path).toBe(200);
    }
    // The metrics token opens /metrics only.
    expect((await callFrom(from, instance.port, '/admin/apps', { token: METRICS_TOKEN })).status).toBe(401);

    const refusedKey = uniqueKey('refused');
    const writes: [string, string, unknown?][] = [
      ['POST', '/admin/apps', { key: refusedKey }],
      ['PATCH', `/admin/apps/${key}`, { name: 'changed by ops' }],
      ['POST', `/admin/apps/${key}/secret`],
      ['DELETE', `/admin/apps/${key}`],
    ];
    for (const [method, path, body] of writes) {
      const res = await callFrom(from, instance.port, path, { method, token: OPS_TOKEN, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    const shown = await callFrom(from, instance.port, `/admin/apps/${key}`, { token: OPS_TOKEN });
    expect(shown.body.name).not.toBe('changed by ops');
    expect((await callFrom(from, instance.port, `/admin/apps/${refusedKey}`, { token: OPS_TOKEN })).status).toBe(404);
    expect((await takeIds(instance.url, key, secrets[0], 1)).status).toBe(200); // not rotated, not retired

    const patched = await callFrom(from, instance.port, `/admin/apps/${key}`, {
      method: 'PATCH',
      token: ADMIN_TOKEN,
      body: { name: 'changed by admin' },
    });
    expect(patched.status).toBe(200);
    const rotated = await callFrom(from, instance.port, `/admin/apps/${key}/secret`, {
      method: 'POST',
      token: ADMIN_TOKEN,
    });
    expect(rotated.status).toBe(200);
    secrets.push(rotated.body.secret);
    for (const verb of ['hold', 'release']) {
      const res = await callFrom(from, instance.port, `/admin/apps/${key}/${verb}`, {
        method: 'POST',
        token: ADMIN_TOKEN,
      });
      expect(res.status, verb).toBe(200);
    }
    // The reconcile is mounted on the app at its whole path, not under the admin router: named all the same.
    const series = uniqueKey('audited-series');
    await register(instance.url, { key: series, format: 'A{yyyy}-{seq:4}', gapless: true });
    for (const token of [OPS_TOKEN, ADMIN_TOKEN]) {
      const res = await callFrom(from, instance.port, `/admin/apps/${series}/numbers/reconcile`, { token, body: {} });
      expect(res.status, JSON.stringify(res.body)).toBe(token === ADMIN_TOKEN ? 200 : 403);
    }
    const retired = await callFrom(from, instance.port, `/admin/apps/${key}`, { method: 'DELETE', token: ADMIN_TOKEN });
    expect(retired.status).toBe(204);

    await sleep(1500); // info lines are flushed at least once a second
    const lines = jsonLines(instance, 'audit').filter((l) => l.address?.endsWith('127.0.0.6'));
    const summary = lines.map((l) => `${l.audit} ${l.entity ?? '-'} ${l.tokenKind} ${l.status}`);
    expect(summary).toEqual([
      `register ${key} admin 201`,
      `register ${refusedKey} ops 403`,
      `update ${key} ops 403`,
      `rotate_secret ${key} ops 403`,
      `retire ${key} ops 403`,
      `update ${key} admin 200`,
      `rotate_secret ${key} admin 200`,
      `hold ${key} admin 200`,
      `release ${key} admin 200`,
      `reconcile_gapless ${series} ops 403`,
      `reconcile_gapless ${series} admin 200`,
      `retire ${key} admin 204`,
    ]);
    const requestIds = [created, patched, rotated, retired].map((r) => r.headers['x-request-id']);
    for (const id of requestIds) expect(lines.some((l) => l.reqId === id)).toBe(true);
    for (const secret of secrets) expect(instance.output()).not.toContain(secret);
    expect(instance.output()).not.toContain(ADMIN_TOKEN);
    expect(instance.output()).not.toContain(OPS_TOKEN);
  });

  it('every answer has nosniff and Cache-Control: no-store; dashboard assets are own properties only', async () => {
    const from = '127.0.0.7';
    const key = uniqueKey('headers');
    const secret = await register(instance.url, { key, maxSizePerSecond: 0 });
    const answers: [string, Answer][] = [
      ['take', await callFrom(from, instance.port, `/apps/${key}/ids`, { token: secret, body: { count: 2 } })],
      ['401', await callFrom(from, instance.port, `/apps/${key}/ids`, { token: 'wrong', body: { count: 2 } })],
      ['404', await callFrom(from, instance.port, '/nowhere')],
      ['admin', await callFrom(from, instance.port, '/admin/apps', { token: ADMIN_TOKEN })],
      ['healthz', await callFrom(from, instance.port, '/healthz')],
      ['readyz', await callFrom(from, instance.port, '/readyz')],
      ['openapi', await callFrom(from, instance.port, '/openapi.json')],
      ['metrics', await callFrom(from, instance.port, '/metrics', { token: METRICS_TOKEN })],
      ['dashboard', await callFrom(from, instance.port, '/admin/ui')],
      ['script', await callFrom(from, instance.port, '/admin/ui/dashboard.js')],
    ];
    for (const [name, res] of answers) {
      expect(res.headers['x-content-type-options'], name).toBe('nosniff');
      expect(res.headers['cache-control'], name).toBe('no-store');
    }
    expect(answers[0][1].status).toBe(200);
    for (const asset of ['constructor', '__proto__', 'hasOwnProperty', 'toString', 'valueOf']) {
      const res = await callFrom(from, instance.port, `/admin/ui/${asset}`);
      expect(res.status, asset).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('/readyz is single-flight and cached ~1 s: 300 concurrent and 3 s of back-to-back probes cost a few Redis PINGs', async () => {
    const direct = deployment!.direct;
    await direct.config('RESETSTAT');
    const started = Date.now();
    const burst = await Promise.all(Array.from({ length: 300 }, () => call(`${instance.url}/readyz`)));
    expect(burst.every((r) => r.status === 200 && r.body.status === 'ready')).toBe(true);
    let sequential = 0;
    while (Date.now() - started < 3000) {
      expect((await call(`${instance.url}/readyz`)).status).toBe(200);
      sequential++;
    }
    const seconds = (Date.now() - started) / 1000;
    const { ping: pings } = await commandCalls(direct, 'ping');
    process.stderr.write(`readyz: ${300 + sequential} probes in ${seconds.toFixed(1)} s, ${pings} Redis PINGs\n`);
    expect(sequential).toBeGreaterThan(20);
    expect(pings).toBeGreaterThanOrEqual(1);
    expect(pings).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
  });
});

/** A socket to `port` that has connected; resolves when connected, records when it closed. */
async function openSocket(
  port: number,
): Promise<{ socket: Socket; closedAt: () => number | undefined; received: () => string }> {
  const socket = connect(port, '127.0.0.1');
  let closed: number | undefined;
  let data = '';
  socket.on('data', (d) => (data += String(d)));
  socket.on('close', () => (closed = Date.now()));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, closedAt: () => closed, received: () => data };
}

describeWithServices(
  'slow clients are cut off within the limits while others are served (a service process)',
  { mysql: true },
  () => {
    const HEADERS_MS = 2000;
    const REQUEST_MS = 3000;
    const MAX_CONNECTIONS = 60;
    let deployment: PrivateDeployment | undefined;
    let instance: Instance;

    beforeAll(async () => {
      deployment = await privateDeployment();
      instance = await deployment.start({
        IDPOOL_HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
        IDPOOL_HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
        IDPOOL_HTTP_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
        IDPOOL_REQUEST_LOG: 'false',
      });
    }, 60_000);

    afterAll(async () => {
      await deployment?.stop();
    });

    it('trickled headers are closed after the headers timeout, trickled bodies after the request timeout, silent sockets too', async () => {
      const key = uniqueKey('slow');
      const secret = await register(instance.url, { key, maxSizePerSecond: 0, maxSizePerTimes: 10 });

      const opened = Date.now();
      const silent = await Promise.all(Array.from({ length: 5 }, () => openSocket(instance.port)));
      const headerTricklers = await Promise.all(Array.from({ length: 10 }, () => openSocket(instance.port)));
      const bodyTricklers = await Promise.all(Array.from({ length: 10 }, () => openSocket(instance.port)));
      for (const t of headerTricklers) t.socket.write(`POST /apps/${key}/ids HTTP/1.1\r\nHost: idpool\r\n`);
      for (const t of bodyTricklers) {
        t.socket.write(
          `POST /apps/${key}/ids HTTP/1.1\r\nHost: idpool\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"count":`,
        );
      }
      // One byte each every 200 ms: never finishing, never idle.
      const trickle = setInterval(() => {
        for (const t of headerTricklers) if (!t.closedAt()) t.socket.write('X');
        for (const t of bodyTricklers) if (!t.closedAt()) t.socket.write(' ');
      }, 200);

      // Ordinary clients meanwhile: every request answered, promptly.
      const served: number[] = [];
      let serving = true;
      const ordinary = (async () => {
        while (serving) {
          const t0 = Date.now();
          const res = await takeIds(instance.url, key, secret, 5);
          expect(res.status).toBe(200);
          served.push(Date.now() - t0);
          await sleep(20);
        }
      })();
      const allClosed = () =>
        [...silent, ...headerTricklers, ...bodyTricklers].every((t) => t.closedAt() !== undefined);
      const deadline = Date.now() + 15_000;
      while (!allClosed() && Date.now() < deadline) await sleep(100);
      clearInterval(trickle);
      serving = false;
      await ordinary;

      const after = (group: { closedAt: () => number | undefined }[]) =>
        group.map((t) => (t.closedAt() ?? Number.POSITIVE_INFINITY) - opened);
      const silentMs = after(silent);
      const headersMs = after(headerTricklers);
      const bodyMs = after(bodyTricklers);
      process.stderr.write(
        `slow clients closed after (ms): silent ${Math.max(...silentMs)}, trickled headers ${Math.min(...headersMs)}-${Math.max(...headersMs)}, trickled body ${Math.min(...bodyMs)}-${Math.max(...bodyMs)}; ${served.length} ordinary requests meanwhile, slowest ${Math.max(...served)} ms\n`,
      );
      // Node checks the limits once a second (connectionsCheckingInterval); 2.5 s more for a loaded machine.
      for (const ms of [...silentMs, ...headersMs]) {
        expect(ms).toBeGreaterThanOrEqual(HEADERS_MS - 100);
        expect(ms).toBeLessThan(HEADERS_MS + 1000 + 2500);
      }
      for (const ms of bodyMs) {
        expect(ms).toBeGreaterThanOrEqual(REQUEST_MS - 100);
        expect(ms).toBeLessThan(REQUEST_MS + 1000 + 2500);
      }
      for (const t of [...headerTricklers, ...bodyTricklers]) expect(t.received()).toMatch(/^HTTP\/1\.1 408 /);
      expect(served.length).toBeGreaterThan(20);
    }, 30_000);

    it(`at most ${MAX_CONNECTIONS} connections: one more is closed at once, and served again when they are gone`, async () => {
      const held = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => openSocket(instance.port)));
      await sleep(200);
      const extra = await openSocket(instance.port);
      extra.socket.write('GET /healthz HTTP/1.1\r\nHost: idpool\r\n\r\n');
      const deadline = Date.now() + 3000;
      while (extra.closedAt() === undefined && Date.now() < deadline) await sleep(20);
      expect(extra.closedAt()).toBeDefined();
      expect(extra.received()).toBe('');
      for (const h of held) h.socket.destroy();
      const until = Date.now() + 5000;
      let status = 0;
      while (status !== 200 && Date.now() < until) {
        status = await call(`${instance.url}/healthz`).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await sleep(50);
      }
      expect(status).toBe(200);
    });
  },
);

describeWithServices(
  'rotation and retirement reach other instances at once (two service processes)',
  { mysql: true },
  () => {
    let deployment: PrivateDeployment | undefined;
    const instances: Instance[] = [];

    beforeAll(async () => {
      deployment = await privateDeployment();
      instances.push(await deployment.start({ IDPOOL_REQUEST_LOG: 'false' }));
      instances.push(await deployment.start({ IDPOOL_REQUEST_LOG: 'false' }));
    }, 60_000);

    afterAll(async () => {
      await deployment?.stop();
    });

    /** Ms until `check` holds on B, polling every 10 ms for at most 5 s. */
    async function msUntil(check: () => Promise<boolean>): Promise<number> {
      const t0 = Date.now();
      while (!(await check())) {
        if (Date.now() - t0 > 5000) return Number.POSITIVE_INFINITY;
        await sleep(10);
      }
      return Date.now() - t0;
    }

    it('rotate on A: the old secret is refused on B within ~1 s, the new one works; retire on A: refused on B as fast', async () => {
      const [a, b] = instances;
      const key = uniqueKey('rotate');
      const oldSecret = await register(a.url, { key, maxSizePerSecond: 0 });
      expect((await takeIds(b.url, key, oldSecret, 1)).status).toBe(200);

      const rotated = await call(`${a.url}/admin/apps/${key}/secret`, { method: 'POST', token: ADMIN_TOKEN });
      expect(rotated.status).toBe(200);
      const rotateMs = await msUntil(async () => (await takeIds(b.url, key, oldSecret, 1)).status === 401);
      expect((await takeIds(b.url, key, rotated.body.secret, 1)).status).toBe(200);

      expect((await call(`${a.url}/admin/apps/${key}`, { method: 'DELETE', token: ADMIN_TOKEN })).status).toBe(204);
      const retireMs = await msUntil(async () => (await takeIds(b.url, key, rotated.body.secret, 1)).status === 401);
      process.stderr.write(`propagation to another instance: rotation ${rotateMs} ms, retirement ${retireMs} ms\n`);
      expect(rotateMs).toBeLessThan(1000);
      expect(retireMs).toBeLessThan(1000);
    });
  },
);
