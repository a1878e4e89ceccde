import { describe, expect, it } from 'vitest';
import {
  IdpoolClient,
  IdpoolClientError,
  IdpoolConflictError,
  IdpoolHttpError,
  IdpoolInvalidRequestError,
  IdpoolNetworkError,
  IdpoolRateLimitedError,
  IdpoolTimeoutError,
  IdpoolUnauthorizedError,
  IdpoolUnavailableError,
  type IdpoolClientOptions,
} from '../../src/client';
import { retryAfterMs } from '../../src/client/transport';
import { withClientSeams } from '../../src/client/seams';
import { FakeClock } from '../support/clock';

const A = 'http://a.test:8080';
const B = 'http://b.test:8080';

interface Seen {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: any;
}

type Reply = Response | Error | 'hang';

/**
 * A fetch that answers from a script per endpoint and records every request.
 * When an endpoint's script runs out, it hands out increasing ids.
 */
function fakeFetch(script: Record<string, Reply[]> = {}) {
  const seen: Seen[] = [];
  let nextId = 1000n;
  const fn = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers = Object.fromEntries(
      Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const body = init?.body ? JSON.parse(init.body as string) : undefined;
    seen.push({ url, method: init?.method ?? 'GET', headers, body });
    const base = Object.keys(script).find((b) => url.startsWith(b));
    const reply = base ? script[base].shift() : undefined;
    if (reply === 'hang') {
      return new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
      });
    }
    if (reply instanceof Error) throw reply;
    if (reply) return reply;
    const count: number = body?.count ?? 1;
    const ids = Array.from({ length: count }, () => String(nextId++));
    return json(200, { ids });
  }) as typeof fetch;
  return { fn, seen };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

const refused = () =>
  new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });

function client(fetchFn: typeof fetch, clock: FakeClock, extra: Partial<IdpoolClientOptions> = {}) {
  return new IdpoolClient(
    withClientSeams({
      endpoints: [A, B],
      entities: { orders: { secret: 's3cret' }, trendy: { secret: 't3', mode: 'trend', buffer: { size: 10 } } },
      fetch: fetchFn,
      clock,
      ...extra,
    }),
  );
}

describe('IdpoolClient failover', () => {
  it('moves to the next endpoint on a network error, with the same Idempotency-Key, and stays there', async () => {
    const f = fakeFetch({ [A]: [refused()] });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    const ids = await c.take('orders', 3);
    expect(ids).toEqual(['1000', '1001', '1002']);
    expect(f.seen.map((s) => s.url)).toEqual([`${A}/apps/orders/ids`, `${B}/apps/orders/ids`]);
    expect(f.seen[0].headers['idempotency-key']).toMatch(/^[\x20-\x7e]{1,128}$/);
    expect(f.seen[1].headers['idempotency-key']).toBe(f.seen[0].headers['idempotency-key']);
    expect(f.seen[1].headers.authorization).toBe('Bearer s3cret');
    expect(f.seen[1].body).toEqual({ count: 3 });

    await c.take('orders', 1);
    expect(f.seen[2].url).toBe(`${B}/apps/orders/ids`);
    expect(f.seen[2].headers['idempotency-key']).not.toBe(f.seen[0].headers['idempotency-key']);
  });

  it('moves on after a 5xx and after a timeout', async () => {
    const f = fakeFetch({
      [A]: [json(500, { error: { code: 'internal', message: 'internal error' } }), 'hang'],
      [B]: [refused()],
    });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = client(f.fn, clock, { timeoutMs: 30, downForMs: 0 });
    // A: 500 → B: refused → A: hangs until the 30 ms timeout → B: answers.
    await expect(c.take('orders', 1)).resolves.toEqual(['1000']);
    expect(f.seen.map((s) => s.url.slice(0, A.length))).toEqual([A, B, A, B]);
  });

  it('honours Retry-After before asking the same endpoint again', async () => {
    const f = fakeFetch({
      [A]: [json(503, { error: { code: 'pool_exhausted', message: 'empty' } }, { 'retry-after': '2' })],
    });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = new IdpoolClient(
      withClientSeams({ endpoints: A, entities: { orders: { secret: 's' } }, fetch: f.fn, clock }),
    );
    const t0 = clock.now();
    await expect(c.take('orders', 1)).resolves.toEqual(['1000']);
    expect(f.seen).toHaveLength(2);
    expect(clock.sleeps).toEqual([2000]);
    expect(clock.now() - t0).toBeGreaterThanOrEqual(2000);
  });

  it('with two endpoints, asks the other one first and only then waits for the Retry-After', async () => {
    const busy = () => json(503, { error: { code: 'unavailable', message: 'down' } }, { 'retry-after': '1' });
    const f = fakeFetch({ [A]: [busy()], [B]: [busy()] });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = client(f.fn, clock);
    await expect(c.take('orders', 1)).resolves.toEqual(['1000']);
    expect(f.seen.map((s) => s.url.slice(0, A.length))).toEqual([A, B, A]);
    expect(clock.sleeps).toEqual([1000]);
  });

  it('backs off from an endpoint that keeps failing: downForMs, doubling', async () => {
    const f = fakeFetch({ [A]: [refused(), refused(), json(500, { error: { code: 'internal', message: 'bug' } })] });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = client(f.fn, clock, { endpoints: A, downForMs: 100 });
    await expect(c.take('orders', 1)).resolves.toEqual(['1000']);
    expect(clock.sleeps).toEqual([100, 200, 400]);
    // A success resets the back-off.
    f.seen.length = 0;
    await c.take('orders', 1);
    expect(f.seen).toHaveLength(1);
    expect(clock.sleeps).toHaveLength(3);
  });

  it('gives up with IdpoolUnavailableError listing every attempt', async () => {
    const f = fakeFetch({ [A]: Array.from({ length: 5 }, refused), [B]: Array.from({ length: 5 }, refused) });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }), { maxAttempts: 4, downForMs: 10 });
    const err = await c.take('orders', 1).catch((e) => e);
    expect(err).toBeInstanceOf(IdpoolUnavailableError);
    expect(err.attempts).toHaveLength(4);
    expect(err.attempts.every((a: unknown) => a instanceof IdpoolNetworkError)).toBe(true);
    expect(err.lastError.message).toContain('ECONNREFUSED');
    expect(f.seen).toHaveLength(4);
  });

  it("gives up with the last real answer (status, code, message), not the other endpoint's connection error", async () => {
    const broken = () => json(500, { error: { code: 'internal', message: 'Cannot convert INV1 to a BigInt' } });
    const f = fakeFetch({ [A]: Array.from({ length: 4 }, broken), [B]: Array.from({ length: 4 }, refused) });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }), { maxAttempts: 4, downForMs: 10 });
    const err = await c.take('orders', 1).catch((e) => e);
    expect(err).toBeInstanceOf(IdpoolUnavailableError);
    // The last attempt was B's refusal; the error still leads with A's answer.
    expect(err.lastError).toBeInstanceOf(IdpoolNetworkError);
    expect(err.lastAnswer).toBeInstanceOf(IdpoolHttpError);
    expect([err.lastAnswer.status, err.lastAnswer.code, err.lastAnswer.endpoint]).toEqual([500, 'internal', A]);
    expect(err.message).toContain(`last answer: ${A}: 500 internal: Cannot convert INV1 to a BigInt`);
    expect(err.cause).toBe(err.lastAnswer);
  });

  it('sends one Idempotency-Key on every attempt of one take, whatever each attempt met', async () => {
    const f = fakeFetch({
      [A]: [json(500, { error: { code: 'internal', message: 'bug' } }), 'hang'],
      [B]: [
        refused(),
        json(503, { error: { code: 'unavailable', message: 'still in progress' } }, { 'retry-after': '1' }),
      ],
    });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }), { timeoutMs: 30, downForMs: 0 });
    await expect(c.take('orders', 2)).resolves.toEqual(['1000', '1001']);
    const keys = f.seen.map((s) => s.headers['idempotency-key']);
    expect(keys).toHaveLength(5);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[\x20-\x7e]{1,128}$/);
  });

  it("sends a gapless take's reference in the body and the caller's own Idempotency-Key on every attempt", async () => {
    const f = fakeFetch({ [A]: [refused()] });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }), { downForMs: 0 });
    await c.take('orders', 2, { reference: 'INV-4711', idempotencyKey: 'order-4711' });
    expect(f.seen.map((s) => [s.headers['idempotency-key'], s.body])).toEqual([
      ['order-4711', { count: 2, reference: 'INV-4711' }],
      ['order-4711', { count: 2, reference: 'INV-4711' }],
    ]);
    // Without options the body is the count alone, as before.
    await c.take('orders', 1);
    expect(f.seen[2].body).toEqual({ count: 1 });
    // Ids handed out from this process never reach the service: nowhere to send a reference.
    await expect(c.take('trendy', 1, { reference: 'INV-1' })).rejects.toThrow(/hands out ids from this process/);
  });

  it('does not wait for a Retry-After that ends after the deadline', async () => {
    const f = fakeFetch({
      [A]: [json(503, { error: { code: 'pool_exhausted', message: 'empty' } }, { 'retry-after': '20' })],
    });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = client(f.fn, clock, { endpoints: A, deadlineMs: 5000 });
    const err = await c.take('orders', 1).catch((e) => e);
    expect(err).toBeInstanceOf(IdpoolUnavailableError);
    expect(err.lastError).toBeInstanceOf(IdpoolHttpError);
    expect(err.lastError.code).toBe('pool_exhausted');
    expect(clock.sleeps).toEqual([]);
    expect(f.seen).toHaveLength(1);
  });

  it('records a timeout as IdpoolTimeoutError', async () => {
    const f = fakeFetch({ [A]: ['hang', 'hang'] });
    const c = new IdpoolClient(
      withClientSeams({
        endpoints: A,
        entities: { orders: { secret: 's' } },
        fetch: f.fn,
        clock: new FakeClock({ sleep: 'advance' }),
        timeoutMs: 20,
        maxAttempts: 2,
        downForMs: 0,
      }),
    );
    const err = await c.take('orders', 1).catch((e) => e);
    expect(err).toBeInstanceOf(IdpoolUnavailableError);
    expect(err.attempts.map((a: Error) => a.constructor)).toEqual([IdpoolTimeoutError, IdpoolTimeoutError]);
  });
});

describe('IdpoolClient: 503 refusals of one entity', () => {
  /** What every instance answers a take of an entity whose period's 9 numbers are spent. */
  const spent = () =>
    json(
      503,
      { error: { code: 'period_exhausted', message: 'receipts: period 202611290315 has handed out all 9 numbers' } },
      { 'retry-after': '3461' },
    );
  const threeEntities = (fetchFn: typeof fetch, clock: FakeClock) =>
    client(fetchFn, clock, {
      entities: { receipts: { secret: 'r' }, orders: { secret: 's3cret' }, invoices: { secret: 'i' } },
    });

  it('period_exhausted ends the call in one attempt with IdpoolUnavailableError leading with the answer; the other entities are served at once', async () => {
    const f = fakeFetch({
      [`${A}/apps/receipts`]: Array.from({ length: 20 }, spent),
      [`${B}/apps/receipts`]: Array.from({ length: 20 }, spent),
    });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = threeEntities(f.fn, clock);
    for (let i = 0; i < 20; i++) {
      const err = await c.take('receipts', 1).catch((e) => e);
      expect(err).toBeInstanceOf(IdpoolUnavailableError);
      expect(err.refused).toBe(true);
      expect(err.attempts).toHaveLength(1);
      expect([err.lastAnswer.status, err.lastAnswer.code, err.lastAnswer.retryAfterMs]).toEqual([
        503,
        'period_exhausted',
        3_461_000,
      ]);
      expect(err.message).toMatch(/^idpool unavailable: http:\/\/a\.test:8080: 503 period_exhausted: receipts: period/);
    }
    expect(f.seen).toHaveLength(20);
    // Another entity through the same client: its first endpoint, at once.
    const t0 = clock.now();
    await expect(c.take('orders', 2)).resolves.toEqual(['1000', '1001']);
    await expect(c.take('invoices', 1)).resolves.toEqual(['1002']);
    expect(f.seen.slice(20).map((s) => s.url)).toEqual([`${A}/apps/orders/ids`, `${A}/apps/invoices/ids`]);
    expect(clock.now()).toBe(t0);
    expect(clock.sleeps).toEqual([]);
  });

  it.each(['entity_held', 'gapless_ledger_behind'])(
    '%s ends the call at once too, after a network error before it',
    async (code) => {
      const held = () => json(503, { error: { code, message: 'entity "receipts" refused' } }, { 'retry-after': '60' });
      const f = fakeFetch({ [A]: [refused()], [`${B}/apps/receipts`]: [held()] });
      const clock = new FakeClock({ sleep: 'advance' });
      const c = threeEntities(f.fn, clock);
      const err = await c.take('receipts', 1).catch((e) => e);
      expect(err).toBeInstanceOf(IdpoolUnavailableError);
      expect(err.refused).toBe(true);
      expect(err.attempts.map((a: Error) => a.constructor)).toEqual([IdpoolNetworkError, IdpoolHttpError]);
      expect([err.lastAnswer.code, err.lastAnswer.retryAfterMs]).toEqual([code, 60_000]);
      await expect(c.take('orders', 1)).resolves.toEqual(['1000']);
      expect(f.seen.map((s) => s.url)).toEqual([
        `${A}/apps/receipts/ids`,
        `${B}/apps/receipts/ids`,
        `${B}/apps/orders/ids`,
      ]);
      expect(clock.sleeps).toEqual([]);
    },
  );

  it('pool_exhausted waits its Retry-After for that take alone and asks the next endpoint; no endpoint is marked down', async () => {
    const short = () => json(503, { error: { code: 'pool_exhausted', message: 'empty' } }, { 'retry-after': '1' });
    const f = fakeFetch({ [`${A}/apps/receipts`]: [short()] });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = threeEntities(f.fn, clock);
    await expect(c.take('receipts', 1)).resolves.toEqual(['1000']);
    expect(clock.sleeps).toEqual([1000]);
    expect(f.seen.map((s) => s.url)).toEqual([`${A}/apps/receipts/ids`, `${B}/apps/receipts/ids`]);
    // A stays up: with B failing, another entity is answered by A without waiting.
    f.seen.length = 0;
    const g = fakeFetch({ [`${A}/apps/receipts`]: [short()], [B]: [refused()] });
    const d = threeEntities(g.fn, clock);
    await expect(d.take('receipts', 1)).resolves.toEqual(['1000']);
    await expect(d.take('orders', 1)).resolves.toEqual(['1001']);
    expect(g.seen.map((s) => s.url)).toEqual([
      `${A}/apps/receipts/ids`,
      `${B}/apps/receipts/ids`,
      `${A}/apps/receipts/ids`,
      `${A}/apps/orders/ids`,
    ]);
    expect(clock.sleeps).toEqual([1000, 1000]);
  });

  it('a leased buffer waits out pool_exhausted; period_exhausted and entity_held end it at once with the error', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    let refusals: string[] = ['pool_exhausted'];
    let answered = 0;
    const fetchImpl = (async () => {
      answered++;
      const code = refusals.shift();
      if (code) return json(503, { error: { code, message: 'no' } }, { 'retry-after': '1' });
      return json(200, { first: '0', last: '3', count: 4, delta: 1, remainder: 0 });
    }) as unknown as typeof fetch;
    const leasing = () =>
      new IdpoolClient(
        withClientSeams({
          endpoints: [A, B],
          fetch: fetchImpl,
          clock,
          entities: { orders: { secret: 's', mode: 'trend', lease: { ids: 'number', prefetchAt: 0.99 } } },
        }),
      );
    const waiting = leasing();
    await expect(waiting.leased('orders').nextAsync()).resolves.toBe(0);
    expect(clock.sleeps.filter((ms) => ms === 1000)).toHaveLength(1);
    waiting.close();
    for (const code of ['period_exhausted', 'entity_held']) {
      refusals = [code, code, code];
      answered = 0;
      const sleeps = clock.sleeps.length;
      const refusing = leasing();
      const err = await refusing
        .leased('orders')
        .nextAsync()
        .catch((e) => e);
      expect(err).toBeInstanceOf(IdpoolUnavailableError);
      expect(err.lastAnswer.code).toBe(code);
      expect(answered).toBe(1);
      expect(clock.sleeps.slice(sleeps).filter((ms) => ms === 1000)).toEqual([]);
      refusing.close();
    }
  });

  it('unavailable (a dependency down on that instance) still marks the endpoint down', async () => {
    const down = () => json(503, { error: { code: 'unavailable', message: 'redis down' } }, { 'retry-after': '5' });
    const f = fakeFetch({ [A]: [down()] });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = threeEntities(f.fn, clock);
    await expect(c.take('receipts', 1)).resolves.toEqual(['1000']);
    await expect(c.take('orders', 1)).resolves.toEqual(['1001']);
    expect(f.seen.map((s) => s.url.slice(0, A.length))).toEqual([A, B, B]);
  });
});

describe('IdpoolClient 4xx', () => {
  it.each([
    [400, 'invalid_request', IdpoolInvalidRequestError],
    [401, 'unauthorized', IdpoolUnauthorizedError],
    [409, 'conflict', IdpoolConflictError],
  ])('never retries %i', async (status, code, Type) => {
    const f = fakeFetch({ [A]: [json(status, { error: { code, message: 'no' } })] });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    const err = await c.take('orders', 1).catch((e) => e);
    expect(err).toBeInstanceOf(Type);
    expect(err).toBeInstanceOf(IdpoolHttpError);
    expect(err.status).toBe(status);
    expect(err.code).toBe(code);
    expect(f.seen).toHaveLength(1);
  });

  it('never retries 429 but reports its Retry-After', async () => {
    const f = fakeFetch({
      [A]: [json(429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '3' })],
    });
    const clock = new FakeClock({ sleep: 'advance' });
    const c = client(f.fn, clock);
    const err = await c.take('orders', 1).catch((e) => e);
    expect(err).toBeInstanceOf(IdpoolRateLimitedError);
    expect(err.retryAfterMs).toBe(3000);
    expect(f.seen).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('rejects an answer without the ids asked for, without retrying', async () => {
    const f = fakeFetch({ [A]: [json(200, { ids: ['1'] })] });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    const err = await c.take('orders', 2).catch((e) => e);
    expect(err).toBeInstanceOf(IdpoolClientError);
    expect(err.message).toContain('without 2 ids');
    expect(f.seen).toHaveLength(1);
  });

  it('returns business numbers as the strings they are; refuses an answer that is neither', async () => {
    const numbers = ['INV20261128-000001', 'INV20261128-000002'];
    const f = fakeFetch({ [A]: [json(200, { ids: numbers }), json(200, { ids: ['a b', 'c'] })] });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    expect(await c.take('orders', 2)).toEqual(numbers);
    expect(await c.take('orders', 2).catch((e: unknown) => e)).toBeInstanceOf(IdpoolClientError);
  });
});

describe('IdpoolClient buffer', () => {
  it('prefetches batches for a trend entity and serves takes locally', async () => {
    const f = fakeFetch();
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    expect(await c.take('trendy', 2)).toEqual(['1000', '1001']);
    expect(f.seen).toHaveLength(1);
    expect(f.seen[0].body).toEqual({ count: 10 });
    expect(c.buffered('trendy')).toBe(8);
    // 8 → 5 left: no fetch yet (refill starts below half of 10).
    expect(await c.take('trendy', 3)).toEqual(['1002', '1003', '1004']);
    expect(f.seen).toHaveLength(1);
    // 5 → 4 left: a prefetch of 6 (up to size) starts in the background.
    expect(await c.take('trendy', 1)).toEqual(['1005']);
    expect(f.seen).toHaveLength(2);
    expect(f.seen[1].body).toEqual({ count: 6 });
    await new Promise((r) => setImmediate(r));
    expect(c.buffered('trendy')).toBe(10);
    const rest = await c.take('trendy', 10);
    expect(rest).toEqual(Array.from({ length: 10 }, (_, i) => String(1006 + i)));
  });

  it('asks directly for a take larger than one batch', async () => {
    const f = fakeFetch();
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    expect(await c.take('trendy', 25)).toHaveLength(25);
    expect(f.seen.map((s) => s.body)).toEqual([{ count: 25 }]);
    expect(c.buffered('trendy')).toBe(0);
  });

  it('shares one fetch among concurrent takes and hands out each id once', async () => {
    const f = fakeFetch();
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    const batches = await Promise.all(Array.from({ length: 8 }, () => c.take('trendy', 3)));
    const all = batches.flat();
    expect(new Set(all).size).toBe(24);
    expect(f.seen.every((s) => s.body.count <= 10)).toBe(true);
  });

  it('reports a failed background prefetch and lets the next take ask again', async () => {
    const errors: unknown[] = [];
    const f = fakeFetch({
      [A]: [
        json(200, { ids: Array.from({ length: 10 }, (_, i) => String(i + 1)) }),
        json(400, { error: { code: 'invalid_request', message: 'count too large' } }),
      ],
    });
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }), {
      onPrefetchError: (err, key) => errors.push([key, err]),
    });
    await c.take('trendy', 6);
    await new Promise((r) => setImmediate(r));
    expect(errors).toHaveLength(1);
    expect((errors[0] as [string, unknown])[0]).toBe('trendy');
    expect((errors[0] as [string, unknown])[1]).toBeInstanceOf(IdpoolInvalidRequestError);
    expect(await c.take('trendy', 4)).toEqual(['7', '8', '9', '10']);
  });

  it('never buffers a monotonic entity: every take is one request for exactly that count', async () => {
    const f = fakeFetch();
    const c = client(f.fn, new FakeClock({ sleep: 'advance' }));
    await c.take('orders', 1);
    await c.take('orders', 1);
    await c.take('orders', 5);
    expect(f.seen.map((s) => s.body.count)).toEqual([1, 1, 5]);
    expect(c.buffered('orders')).toBe(0);
    c.prefetch('orders');
    expect(f.seen).toHaveLength(3);
  });

  it('refuses a buffer for monotonic and snowflake entities', () => {
    for (const mode of ['monotonic', 'snowflake'] as const) {
      expect(
        () => new IdpoolClient({ endpoints: A, entities: { e: { secret: 's', mode, buffer: { size: 10 } } } }),
      ).toThrow(/only trend entities may be buffered/);
    }
    // No mode given means monotonic: also refused.
    expect(() => new IdpoolClient({ endpoints: A, entities: { e: { secret: 's', buffer: { size: 10 } } } })).toThrow(
      /is monotonic/,
    );
  });
});

describe('IdpoolClient options and helpers', () => {
  it('validates its options', () => {
    expect(() => new IdpoolClient({ endpoints: [], entities: {} })).toThrow(/at least one URL/);
    expect(() => new IdpoolClient({ endpoints: 'idpool:8080', entities: {} })).toThrow(/http/);
    expect(() => new IdpoolClient({ endpoints: A, entities: { 'bad key': { secret: 's' } } })).toThrow(/entity key/);
    expect(() => new IdpoolClient({ endpoints: A, entities: { e: { secret: '' } } })).toThrow(/secret/);
    expect(() => new IdpoolClient({ endpoints: A, entities: {}, timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(
      () =>
        new IdpoolClient({
          endpoints: A,
          entities: { e: { secret: 's', mode: 'trend', buffer: { size: 5, batch: 6 } } },
        }),
    ).toThrow(/batch/);
  });

  it('rejects unknown entities, bad counts and use after close', async () => {
    const c = client(fakeFetch().fn, new FakeClock({ sleep: 'advance' }));
    await expect(c.take('nope')).rejects.toThrow(/not configured/);
    await expect(c.take('orders', 0)).rejects.toThrow(/count/);
    c.close();
    await expect(c.take('orders')).rejects.toBeInstanceOf(IdpoolClientError);
  });

  it('reads Retry-After as seconds or an HTTP date, capped', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfterMs('3', now, 30_000)).toBe(3000);
    expect(retryAfterMs('Wed, 01 Jan 2025 00:00:05 GMT', now, 30_000)).toBe(5000);
    expect(retryAfterMs('Tue, 31 Dec 2024 23:59:00 GMT', now, 30_000)).toBe(0);
    expect(retryAfterMs('3600', now, 30_000)).toBe(30_000);
    expect(retryAfterMs('soon', now, 30_000)).toBeUndefined();
    expect(retryAfterMs(null, now, 30_000)).toBeUndefined();
  });
});
