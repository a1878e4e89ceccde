import { expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { register, takeWhenReady } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { suiteInstances } from '../support/suite-instances';

/** What HttpURLConnection (Tinyid's Java client) sends when nobody sets Accept. */
const JAVA_ACCEPT = 'text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2';
const JSON_TYPE = 'application/json;charset=UTF-8';
const TEXT_TYPE = 'text/plain;charset=UTF-8';
const TOKEN_ERROR = '{"data":null,"code":5,"message":"token is error"}';

interface Raw {
  status: number;
  type: string | null;
  body: string;
}

/** One request as a Tinyid client sends it: parameters in the query (GET or POST) or as a form body (POST). */
/** What a take answers while a new entity's first fill is still under way. */
const FIRST_FILL = /has fewer than \d+ ids ready; retry shortly/;

async function tinyid(
  base: string,
  route: string,
  params: Record<string, string | undefined>,
  how: 'get' | 'post-query' | 'post-form' = 'get',
  headers: Record<string, string> = {},
): Promise<Raw> {
  const defined = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined)) as Record<
    string,
    string
  >;
  const query = new URLSearchParams(defined).toString();
  const url = `${base}/tinyid/id/${route}`;
  const res =
    how === 'post-form'
      ? await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
          body: query,
        })
      : await fetch(how === 'get' ? `${url}?${query}` : `${url}?${query}`, {
          method: how === 'get' ? 'GET' : 'POST',
          headers,
        });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

describeWithServices(
  "Tinyid's routes, byte for byte (MariaDB + Redis, real processes)",
  { mysql: true, redis: true },
  () => {
    const run = suiteInstances((base) => ({
      compat: { ...base, IDPOOL_COMPAT: 'tinyid', IDPOOL_REQUEST_LOG: 'all' },
      plain: base,
    }));

    async function entity(mode: 'trend' | 'monotonic', extra: Record<string, unknown> = {}) {
      const key = uniqueKey(`tiny${mode}`);
      const token = await register(run.compat.url, { key, mode, step: 1000, maxSizePerSecond: 0, ...extra });
      return { key, token };
    }

    it('nextId: {"data":[…],"code":200,"message":""} as application/json;charset=UTF-8, by GET, POST query and POST form', async () => {
      const { key, token } = await entity('monotonic');
      const seen: bigint[] = [];
      for (const how of ['get', 'post-query', 'post-form'] as const) {
        const one = await tinyid(run.compat.url, 'nextId', { bizType: key, token }, how);
        expect(one.status).toBe(200);
        expect(one.type).toBe(JSON_TYPE);
        const [id] = /^\{"data":\[(\d+)\],"code":200,"message":""\}$/.exec(one.body)!.slice(1);
        expect(one.body).toBe(`{"data":[${id}],"code":200,"message":""}`);
        seen.push(BigInt(id));

        const four = await tinyid(run.compat.url, 'nextId', { bizType: key, token, batchSize: '4' }, how);
        const ids = JSON.parse(four.body).data as number[];
        expect(ids).toHaveLength(4);
        expect(four.body).toBe(`{"data":[${/\[(.*)\]/.exec(four.body)![1]}],"code":200,"message":""}`);
        seen.push(...(/\[(.*)\]/.exec(four.body)?.[1] ?? '').split(',').map((id) => BigInt(id)));
      }
      // A JSON body carries no parameters for Spring: no bizType, no token.
      const json = await fetch(`${run.compat.url}/tinyid/id/nextId`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ bizType: key, token }),
      });
      expect(await json.text()).toBe(TOKEN_ERROR);
      // A monotonic entity: increasing across every call.
      for (let i = 1; i < seen.length; i++) expect(seen[i] > seen[i - 1]).toBe(true);
    });

    it('nextIdSimple: "3" or "4,5,6,7", typed as Spring types a String for the Accept sent; "" on any failure', async () => {
      const { key, token } = await entity('monotonic');
      const one = await tinyid(run.compat.url, 'nextIdSimple', { bizType: key, token });
      expect(one).toMatchObject({ status: 200, type: TEXT_TYPE });
      expect(one.body).toMatch(/^\d+$/);
      const four = await tinyid(run.compat.url, 'nextIdSimple', { bizType: key, token, batchSize: '4' }, 'post-form');
      expect(four).toMatchObject({ status: 200, type: TEXT_TYPE });
      const ids = four.body.split(',').map(BigInt);
      expect(ids).toHaveLength(4);
      expect(four.body).toBe(ids.join(','));
      expect(ids[0]).toBeGreaterThan(BigInt(one.body));
      // Content negotiation as Spring MVC 4.3 does it for a String.
      const java = await tinyid(run.compat.url, 'nextIdSimple', { bizType: key, token }, 'post-query', {
        accept: JAVA_ACCEPT,
      });
      expect(java.type).toBe('text/html;charset=UTF-8');
      const asJson = await tinyid(run.compat.url, 'nextIdSimple', { bizType: key, token }, 'get', {
        accept: 'application/json',
      });
      expect(asJson.type).toBe('application/json;charset=UTF-8');
      expect(asJson.body).toMatch(/^\d+$/);

      for (const params of [
        { bizType: key, token: 'wrong' },
        { bizType: key },
        { token },
        { bizType: uniqueKey('nobody'), token },
        { bizType: key, token, batchSize: '0' },
        { bizType: key, token, batchSize: '-3' },
      ]) {
        const failed = await tinyid(run.compat.url, 'nextIdSimple', params);
        expect(failed, JSON.stringify(params)).toEqual({ status: 200, type: TEXT_TYPE, body: '' });
      }
    });

    it('a token that does not open the bizType: code 5 "token is error"; other failures code 6 with the message', async () => {
      const { key, token } = await entity('monotonic');
      const other = await entity('monotonic');
      for (const params of [
        { bizType: key, token: 'wrong' },
        { bizType: key, token: other.token },
        { bizType: key },
        { token },
        { bizType: uniqueKey('nobody'), token },
        { bizType: 'not a key!', token },
      ]) {
        for (const route of ['nextId', 'nextSegmentId']) {
          const res = await tinyid(run.compat.url, route, params);
          expect(res, `${route} ${JSON.stringify(params)}`).toEqual({
            status: 200,
            type: JSON_TYPE,
            body: TOKEN_ERROR,
          });
        }
        const simple = await tinyid(run.compat.url, 'nextSegmentIdSimple', params);
        expect(simple).toEqual({ status: 200, type: TEXT_TYPE, body: '' });
      }
      // A monotonic entity leases no segment: code 6, the reason as the message.
      const refused = await tinyid(run.compat.url, 'nextSegmentId', { bizType: key, token });
      expect(refused.status).toBe(200);
      const parsed = JSON.parse(refused.body);
      expect(parsed).toMatchObject({ data: null, code: 6 });
      expect(parsed.message).toContain('monotonic');
      expect(refused.body).toBe(`{"data":null,"code":6,"message":${JSON.stringify(parsed.message)}}`);
      expect(await tinyid(run.compat.url, 'nextSegmentIdSimple', { bizType: key, token })).toEqual({
        status: 200,
        type: TEXT_TYPE,
        body: '',
      });
    });

    it('business numbers: every route refuses them in its own form before any is taken (code 6, JSON), none lost', async () => {
      const { key, token } = await entity('monotonic', { format: 'TIN{yyyy}{MM}{dd}-{seq:6}' });
      for (const route of ['nextId', 'nextSegmentId']) {
        const res = await tinyid(run.compat.url, route, { bizType: key, token, batchSize: '3' });
        expect(res.status).toBe(200);
        expect(res.type).toBe(JSON_TYPE);
        const parsed = JSON.parse(res.body) as { data: unknown; code: number; message: string };
        expect(parsed).toMatchObject({ data: null, code: 6 });
        expect(parsed.message).toMatch(route === 'nextId' ? /business_numbers_not_served/ : /business/);
      }
      for (const route of ['nextIdSimple', 'nextSegmentIdSimple'])
        expect(await tinyid(run.compat.url, route, { bizType: key, token, batchSize: '3' })).toEqual({
          status: 200,
          type: TEXT_TYPE,
          body: '',
        });
      // Nothing was taken: the first number of the native route is the period's first.
      const first = await takeWhenReady(run.compat.url, key, token);
      expect(first.status).toBe(200);
      const { ids } = first.body;
      expect(ids[0]).toMatch(/^TIN\d{8}-000001$/);
    });

    it('batch limits: default 1, cut to 100,000, 0 gives no ids, above maxSizePerTimes code 6, not an int 400', async () => {
      const big = await entity('trend', { maxSizePerTimes: 100_000, maxPoolSize: 1_000_000, step: 100_000 });
      const cut = await tinyid(run.compat.url, 'nextIdSimple', {
        bizType: big.key,
        token: big.token,
        batchSize: '250000',
      });
      const cutIds = cut.body.split(',');
      expect(cutIds).toHaveLength(100_000);
      expect(new Set(cutIds).size).toBe(100_000);
      const cutJson = await tinyid(run.compat.url, 'nextId', {
        bizType: big.key,
        token: big.token,
        batchSize: '100001',
      });
      expect(JSON.parse(cutJson.body).data).toHaveLength(100_000);
      const spaced = await tinyid(run.compat.url, 'nextId', { bizType: big.key, token: big.token, batchSize: ' 2 ' });
      expect(JSON.parse(spaced.body).data).toHaveLength(2);
      const empty = await tinyid(run.compat.url, 'nextId', { bizType: big.key, token: big.token, batchSize: '' });
      expect(JSON.parse(empty.body).data).toHaveLength(1);

      const { key, token } = await entity('monotonic');
      expect(await tinyid(run.compat.url, 'nextId', { bizType: key, token, batchSize: '0' })).toEqual({
        status: 200,
        type: JSON_TYPE,
        body: '{"data":[],"code":200,"message":""}',
      });
      const over = await tinyid(run.compat.url, 'nextId', { bizType: key, token, batchSize: '1001' });
      expect(over.status).toBe(200);
      const overBody = JSON.parse(over.body);
      expect(overBody).toMatchObject({ data: null, code: 6 });
      expect(overBody.message).toContain('maxSizePerTimes (1000)');
      // Spring's binder reads batchSize with Integer.decode: hex and octal too.
      const hex = await tinyid(run.compat.url, 'nextId', { bizType: key, token, batchSize: '0x10' });
      expect(JSON.parse(hex.body).data).toHaveLength(16);
      const octal = await tinyid(run.compat.url, 'nextIdSimple', { bizType: key, token, batchSize: '010' });
      expect(octal.body.split(',')).toHaveLength(8);
      // Not an Integer: Spring Boot 1.5's 400, whatever the token.
      for (const bad of ['abc', '1.5', '99999999999', '0x1g']) {
        for (const route of ['nextId', 'nextIdSimple']) {
          const res = await tinyid(run.compat.url, route, { bizType: key, token: 'wrong', batchSize: bad });
          expect(res.status, bad).toBe(400);
          expect(res.type).toBe(JSON_TYPE);
          const body = JSON.parse(res.body);
          expect(res.body).toBe(
            `{"timestamp":${body.timestamp},"status":400,"error":"Bad Request","exception":"org.springframework.web.method.annotation.MethodArgumentTypeMismatchException","message":"Failed to convert value of type 'java.lang.String' to required type 'java.lang.Integer'; nested exception is java.lang.NumberFormatException: For input string: \\"${bad}\\"","path":"/tinyid/id/${route}"}`,
          );
        }
      }
    });

    it('nextSegmentId[Simple]: (currentId, maxId], loadingId 20 % in, delta and remainder; disjoint from takes', async () => {
      const { key, token } = await entity('trend', { delta: 3, remainder: 1 });
      const json = await tinyid(run.compat.url, 'nextSegmentId', { bizType: key, token });
      expect(json).toMatchObject({ status: 200, type: JSON_TYPE });
      const m =
        /^\{"data":\{"maxId":(\d+),"loadingId":(\d+),"currentId":(-?\d+),"delta":3,"remainder":1\},"code":200,"message":""\}$/.exec(
          json.body,
        );
      expect(m, json.body).not.toBeNull();
      const [maxId, loadingId, currentId] = m!.slice(1).map(BigInt);
      // 1000 ids (the step) 3 apart: the first is currentId + 1, the last maxId.
      expect(maxId - (currentId + 1n)).toBe(999n * 3n);
      expect((currentId + 1n) % 3n).toBe(1n);
      expect(loadingId).toBe(currentId + ((maxId - currentId) * 20n) / 100n);

      const simple = await tinyid(run.compat.url, 'nextSegmentIdSimple', { bizType: key, token }, 'post-query', {
        accept: JAVA_ACCEPT,
      });
      expect(simple.type).toBe('text/html;charset=UTF-8');
      const [c2, l2, m2, d2, r2] = simple.body.split(',');
      expect(simple.body).toBe([c2, l2, m2, d2, r2].join(','));
      expect([d2, r2]).toEqual(['3', '1']);
      expect(BigInt(c2)).toBeGreaterThanOrEqual(maxId);
      expect(BigInt(m2) - BigInt(c2) - 1n).toBe(999n * 3n);
      expect(BigInt(l2)).toBe(BigInt(c2) + ((BigInt(m2) - BigInt(c2)) * 20n) / 100n);
    });

    it('the per-second limit, metrics and the request log work as on the native routes', async () => {
      const { key, token } = await entity('trend', {
        step: 10,
        maxPoolSize: 100,
        maxSizePerTimes: 5,
        maxSizePerSecond: 5,
      });
      let limited: Raw | undefined;
      for (let i = 0; i < 20 && !limited; i++) {
        const res = await tinyid(run.compat.url, 'nextId', { bizType: key, token, batchSize: '5' });
        expect(res.status).toBe(200);
        const { code, message } = JSON.parse(res.body);
        // A new entity's first fill may outlast a take's 250 ms wait on a loaded machine: asked again.
        if (code === 6 && FIRST_FILL.test(message)) continue;
        if (code !== 200) limited = res;
      }
      const body = JSON.parse(limited!.body);
      expect(body).toMatchObject({ data: null, code: 6 });
      expect(body.message).toContain('limited to 5 ids per second');
      const lease = await tinyid(run.compat.url, 'nextSegmentIdSimple', { bizType: key, token });
      // 10 ids (the step) against a limit of 5: refused as Tinyid refuses, with an empty body.
      expect(lease.body).toBe('');

      const wide = await entity('trend', { step: 50 });
      await tinyid(run.compat.url, 'nextSegmentId', { bizType: wide.key, token: wide.token });
      for (let i = 0; i < 20; i++) {
        const { code, message } = JSON.parse(
          (await tinyid(run.compat.url, 'nextId', { bizType: wide.key, token: wide.token, batchSize: '7' })).body,
        );
        if (code === 200) break;
        expect(message).toMatch(FIRST_FILL);
        await new Promise((r) => setTimeout(r, 100));
      }
      const metrics = await (await fetch(`${run.compat.url}/metrics`)).text();
      expect(metrics).toContain(`idpool_segments_leased_total{entity="${wide.key}"} 1`);
      expect(metrics).toContain(`idpool_ids_leased_total{entity="${wide.key}"} 50`);
      expect(metrics).toContain(`idpool_ids_served_total{entity="${wide.key}"} 7`);
      expect(run.compat.output()).toContain('"route":"/tinyid/id/nextSegmentId"');
    });

    it('is mounted only with IDPOOL_COMPAT=tinyid', async () => {
      const res = await fetch(`${run.plain.url}/tinyid/id/nextId?bizType=x&token=y`);
      expect(res.status).toBe(404);
    });
  },
);
