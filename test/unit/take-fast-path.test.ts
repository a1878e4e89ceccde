import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import type { EntityConfig } from '../../src/entities/entity';
import { secretAccepted, secretRecord } from '../../src/entities/secrets';
import { createHttpApp } from '../../src/http/app';
import { takeFastPath } from '../../src/http/routes/ids';
import { httpDeps } from '../support/http-deps';
import { listedIds } from '../../src/pool/taken-ids';
import { entityConfig } from '../support/entity';

const SECRET = 'fast-path-secret-0123456789abcdefghijklmnop';

interface Answer {
  status: number;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

/** One request with exactly these headers and body bytes (fetch would add its own content type). */
function send(
  base: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer | string,
  chunked = false,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const req = httpRequest(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${SECRET}`, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    if (body !== undefined && !chunked) req.setHeader('content-length', Buffer.byteLength(body));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function listen(app: express.Express): Promise<string> {
  server = app.listen(0);
  await new Promise((r) => server!.once('listening', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const JSON_TYPE = { 'content-type': 'application/json' };

describe('the take route fast path', () => {
  it('serves the common form itself and leaves every other request to the router', async () => {
    const seen: { key: unknown; body: unknown; route: unknown }[] = [];
    const app = express();
    app.use(
      takeFastPath(async (req, res) => {
        seen.push({ key: req.params.key, body: req.body, route: (req.route as { path?: unknown }).path });
        res.status(200).json({ fast: true });
      }),
    );
    // What the router would get: answered 299 here, so the test sees who answered.
    app.use((_req, res) => void res.status(299).json({ fast: false }));
    const base = await listen(app);

    const fast = async (path: string, headers: Record<string, string>, body?: Buffer | string) =>
      expect((await send(base, path, headers, body)).status).toBe(200);
    const router = async (path: string, headers: Record<string, string>, body?: Buffer | string, chunked = false) =>
      expect((await send(base, path, headers, body, chunked)).status).toBe(299);

    await fast('/apps/orders/ids', JSON_TYPE, '{"count":3}');
    await fast('/apps/or.d-e_rs/ids?count=4', {});
    await fast('/apps/orders/ids', { 'content-type': 'Application/JSON; charset="UTF-8"' }, '{"count":2}');
    await fast('/apps/orders/ids', JSON_TYPE, '');
    await fast('/apps/orders/ids', JSON_TYPE, '\ufeff{"count":5}');
    await fast('/apps/orders/ids', { 'content-encoding': 'identity', ...JSON_TYPE }, '{"count":6}');
    expect(seen).toEqual([
      { key: 'orders', body: { count: 3 }, route: '/apps/:key/ids' },
      { key: 'or.d-e_rs', body: undefined, route: '/apps/:key/ids' },
      { key: 'orders', body: { count: 2 }, route: '/apps/:key/ids' },
      // express.json answers an empty JSON body with {}.
      { key: 'orders', body: {}, route: '/apps/:key/ids' },
      { key: 'orders', body: { count: 5 }, route: '/apps/:key/ids' },
      { key: 'orders', body: { count: 6 }, route: '/apps/:key/ids' },
    ]);

    await router('/APPS/orders/IDS', JSON_TYPE, '{"count":3}');
    await router('/apps/orders/ids/', JSON_TYPE, '{"count":3}');
    await router('/apps/ord%65rs/ids', JSON_TYPE, '{"count":3}');
    await router('/apps/orders/ids', { 'content-type': 'text/plain' }, 'hello');
    await router('/apps/orders/ids', { 'content-type': 'application/json; charset=latin1' }, '{"count":3}');
    await router('/apps/orders/ids', { 'content-encoding': 'gzip', ...JSON_TYPE }, gzipSync('{"count":3}'));
    await router('/apps/orders/ids', JSON_TYPE, '{"count":3}', true);
    await router('/apps/orders/ids', JSON_TYPE, `{"count":3,"pad":"${'x'.repeat(16 * 1024)}"}`);
    expect(seen).toHaveLength(6);
  });

  describe('answers exactly as the router does', () => {
    let taken: number[];

    async function service(): Promise<string> {
      taken = [];
      let next = 1000;
      const entity: EntityConfig = entityConfig({
        key: 'orders',
        maxSizePerTimes: 10,
        secrets: [secretRecord(SECRET, 0)],
      });
      const app = createHttpApp(
        httpDeps({
          registry: {
            find: async (key: string) => (key === 'orders' ? entity : undefined),
            authenticate: async (key: string, secret: string) =>
              key === 'orders' && secretAccepted(entity, secret, 0) ? entity : undefined,
          } as never,
          takes: {
            take: async (_entity: EntityConfig, count: number) => {
              taken.push(count);
              return listedIds(Array.from({ length: count }, () => String(next++)));
            },
          },
        }),
      );
      return listen(app);
    }

    // Each case on the fast path's spelling and on one only the router serves (a trailing slash).
    const cases: [
      name: string,
      query: string,
      headers: Record<string, string>,
      body: string | undefined,
      status: number,
      expected: unknown,
    ][] = [
      ['a JSON count', '', JSON_TYPE, '{"count":3}', 200, 3],
      ['no body', '', {}, undefined, 200, 1],
      ['?count=', '?count=4', {}, undefined, 200, 4],
      ['an empty JSON body', '', JSON_TYPE, '', 200, 1],
      ['a byte order mark', '', JSON_TYPE, '\ufeff{"count":2}', 200, 2],
      ['invalid JSON', '', JSON_TYPE, '{"count":', 400, 'request body is not valid JSON'],
      ['count out of range', '', JSON_TYPE, '{"count":11}', 400, 'count must be an integer from 1 to 10'],
      ['an unknown field', '', JSON_TYPE, '{"cnt":1}', 400, 'unknown field "cnt"; only "count" is accepted'],
      ['a JSON array', '', JSON_TYPE, '[1]', 400, 'request body must be a JSON object like {"count": 10}'],
      ['a repeated ?count=', '?count=1&count=2', {}, undefined, 400, 'count must be an integer from 1 to 10'],
      ['the same count in ?count= and the body', '?count=3', JSON_TYPE, '{"count":3}', 200, 3],
      [
        '?count= and a body that differ',
        '?count=3',
        JSON_TYPE,
        '{"count":2}',
        400,
        'count is given twice and they differ: ?count=3 and {"count": 2} in the body; send one',
      ],
    ];

    it.each(cases)('%s', async (_name, query, headers, body, status, expected) => {
      const base = await service();
      for (const path of [`/apps/orders/ids${query}`, `/apps/orders/ids/${query}`]) {
        const answer = await send(base, path, headers, body);
        expect(answer.status, path).toBe(status);
        expect(answer.headers['cache-control'], path).toBe('no-store');
        expect(answer.headers['x-content-type-options'], path).toBe('nosniff');
        expect(answer.headers['content-type'], path).toBe('application/json; charset=utf-8');
        if (status === 200) expect((answer.body as { ids: string[] }).ids, path).toHaveLength(expected as number);
        else expect(answer.body, path).toEqual({ error: { code: 'invalid_request', message: expected } });
      }
    });

    it('a body that is not JSON is 415 on either path, saying what to send, and takes no id', async () => {
      const base = await service();
      for (const path of ['/apps/orders/ids', '/apps/orders/ids/'])
        for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
          const answer = await send(base, path, { 'content-type': type }, '{"count":5}');
          expect(answer.status, `${path} ${type}`).toBe(415);
          expect(answer.body).toEqual({
            error: {
              code: 'unsupported_media_type',
              message: `the body is sent as ${type}; send JSON with Content-Type: application/json (or no body at all)`,
            },
          });
        }
      expect(taken).toEqual([]);
    });

    it('a wrong secret is 401 and a large body 413 on either path, and neither takes an id', async () => {
      const base = await service();
      for (const path of ['/apps/orders/ids', '/apps/orders/ids/']) {
        const wrong = await send(base, path, { ...JSON_TYPE, authorization: 'Bearer wrong' }, '{"count":1}');
        expect(wrong.status).toBe(401);
        expect(wrong.body).toEqual({
          error: { code: 'unauthorized', message: 'unknown entity key or invalid secret' },
        });
        const large = await send(base, path, JSON_TYPE, `{"count":1,"pad":"${'x'.repeat(16 * 1024)}"}`);
        expect(large.status).toBe(413);
        expect((large.body as { error: { code: string } }).error.code).toBe('payload_too_large');
      }
      expect(taken).toEqual([]);
    });
  });
});
