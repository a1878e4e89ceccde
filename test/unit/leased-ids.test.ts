import { describe, expect, it } from 'vitest';
import {
  BigIntLeasedIds,
  IdpoolLeaseNotReadyError,
  type LeaseAnswer,
  NumberLeasedIds,
} from '../../src/client/leased-ids';
import { nextStep } from '../../src/double-buffer/double-buffer';
import { IdpoolClient } from '../../src/client';
import { withClientSeams } from '../../src/client/seams';
import { FakeClock } from '../support/clock';

/**
 * A fake service: leases consecutive stretches of one number line with
 * `delta`/`remainder` spacing, recording every size asked for. `hold` keeps
 * the answers back until `release()`.
 */
function fakeService(options: { step?: number; delta?: number; remainder?: number; start?: bigint } = {}) {
  const { step = 100, delta = 1, remainder = 0 } = options;
  let next = options.start ?? 0n;
  const sizes: (number | undefined)[] = [];
  let held: (() => void)[] | undefined;
  let failNext: Error | undefined;
  const lease = async (size: number | undefined): Promise<LeaseAnswer> => {
    sizes.push(size);
    if (held) await new Promise<void>((resolve) => held!.push(resolve));
    if (failNext) {
      const err = failNext;
      failNext = undefined;
      throw err;
    }
    const count = size ?? step;
    const first = next * BigInt(delta) + BigInt(remainder);
    next += BigInt(count);
    return {
      first: first.toString(),
      last: (first + BigInt((count - 1) * delta)).toString(),
      count,
      delta,
      remainder,
    };
  };
  return {
    lease,
    sizes,
    hold: () => (held = []),
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const resolve of waiting) resolve();
    },
    failOnce: (err: Error) => (failNext = err),
  };
}

/** A client leasing number ids of the trend entity `orders` through `fetchImpl`. */
function leasingClient(fetchImpl: typeof fetch, clock: FakeClock): IdpoolClient {
  return new IdpoolClient(
    withClientSeams({
      endpoints: 'http://idpool',
      fetch: fetchImpl,
      clock,
      entities: { orders: { secret: 's', mode: 'trend', lease: { ids: 'number' } } },
    }),
  );
}

const settle = () => new Promise((r) => setImmediate(r));

describe('LeasedIds: the client SDK double buffer over leased segments', () => {
  it('hands out (first..last by delta) synchronously, prefetching the next segment once prefetchAt of it is used', async () => {
    const clock = new FakeClock();
    const service = fakeService({ step: 10, delta: 3, remainder: 2 });
    const ids = new NumberLeasedIds('orders', service.lease, clock, { prefetchAt: 0.2 });
    expect(() => ids.next()).toThrow(IdpoolLeaseNotReadyError);
    await settle();
    await ids.open();
    expect(service.sizes).toEqual([undefined]);
    const got: number[] = [];
    got.push(ids.next());
    expect(service.sizes).toHaveLength(1);
    got.push(ids.next()); // the 2nd of 10 ids: 20 % used, the next lease starts
    await settle();
    expect(service.sizes).toHaveLength(2);
    for (let i = 0; i < 18; i++) got.push(ids.next());
    // The fake's line: n·3 + 2, n = 0..19 over two leases; nothing twice, increasing.
    expect(got).toEqual(Array.from({ length: 20 }, (_, n) => n * 3 + 2));
  });

  it('never hands an id out twice, and next() never waits: it throws not-ready and the lease arrives later', async () => {
    const clock = new FakeClock();
    const service = fakeService({ step: 5 });
    const ids = new BigIntLeasedIds('orders', service.lease, clock, { prefetchAt: 0.5 });
    await ids.open();
    service.hold();
    const got: bigint[] = [];
    for (let i = 0; i < 5; i++) got.push(ids.next());
    await settle();
    // Both segments spent, the lease held back: next() refuses rather than wait.
    expect(() => ids.next()).toThrow(IdpoolLeaseNotReadyError);
    const waiting = ids.nextAsync();
    service.release();
    got.push(await waiting);
    for (let i = 0; i < 4; i++) got.push(ids.next());
    expect(new Set(got).size).toBe(10);
    expect(got).toEqual(Array.from({ length: 10 }, (_, n) => BigInt(n)));
  });

  it('the lease size adapts to demand as Leaf’s step: doubles while segments go fast, halves when they last, never below the first', async () => {
    expect(nextStep(100, 10, { minStep: 100, maxStep: 1000, targetSegmentMs: 1000 })).toBe(200);
    expect(nextStep(800, 10, { minStep: 100, maxStep: 1000, targetSegmentMs: 1000 })).toBe(1000);
    expect(nextStep(400, 5000, { minStep: 100, maxStep: 1000, targetSegmentMs: 1000 })).toBe(200);
    expect(nextStep(100, 5000, { minStep: 100, maxStep: 1000, targetSegmentMs: 1000 })).toBe(100);

    const clock = new FakeClock();
    const service = fakeService({ step: 100 });
    const ids = new NumberLeasedIds('orders', service.lease, clock, { maxSize: 800, targetSegmentMs: 1000 });
    await ids.open();
    // Fast use: every segment gone within a few ms.
    for (let i = 0; i < 1500; i++) {
      try {
        ids.next();
      } catch (err) {
        if (!(err instanceof IdpoolLeaseNotReadyError)) throw err;
        await ids.nextAsync();
      }
      clock.advance(1);
      if (i % 50 === 0) await settle();
    }
    expect(service.sizes.slice(0, 4)).toEqual([undefined, 200, 400, 800]);
    expect(Math.max(...service.sizes.filter((s) => s !== undefined))).toBe(800);
    // Slow use: a segment that lasted more than twice the target halves the next.
    const before = service.sizes.length;
    for (let i = 0; i < 5000 && service.sizes.length < before + 2; i++) {
      await ids.nextAsync();
      clock.advance(10);
      await settle();
    }
    // The first lease of the slow phase may still have come fast; the one after it halves.
    expect(service.sizes[before + 1]).toBe(400);
  });

  it('a failed lease reaches the caller once; the next call leases again; number ids refuse segments past 2^53', async () => {
    const clock = new FakeClock();
    const service = fakeService({ step: 3 });
    const ids = new NumberLeasedIds('orders', service.lease, clock);
    service.failOnce(new Error('service down'));
    await expect(ids.open()).rejects.toThrow('service down');
    await ids.open();
    expect(ids.next()).toBe(0);

    const high = fakeService({ step: 3, start: 2n ** 53n - 2n });
    const unsafe = new NumberLeasedIds('orders', high.lease, clock);
    await expect(unsafe.open()).rejects.toThrow("use ids: 'bigint'");
    const big = new BigIntLeasedIds('orders', high.lease, clock);
    await big.open();
    expect(big.next()).toBe(2n ** 53n + 1n);
  });

  it('refuses a malformed lease answer; options are checked once', async () => {
    const clock = new FakeClock();
    const liar = async (): Promise<LeaseAnswer> => ({ first: '10', last: '12', count: 5, delta: 1, remainder: 0 });
    await expect(new NumberLeasedIds('orders', liar, clock).open()).rejects.toThrow('does not hold 5 ids');
    // A body of `null` (a proxy's empty 200): the SDK's own error, not a TypeError.
    const empty = async () => null as unknown as LeaseAnswer;
    await expect(new NumberLeasedIds('orders', empty, clock).open()).rejects.toThrow(
      'the lease of orders came back malformed',
    );
    expect(() => new NumberLeasedIds('orders', liar, clock, { prefetchAt: 1 })).toThrow(TypeError);
    expect(() => new NumberLeasedIds('orders', liar, clock, { minSize: 10, maxSize: 5 })).toThrow(TypeError);
  });

  it('IdpoolClient: lease only for trend entities without a buffer; leased(key) and take(key) share one buffer', async () => {
    const clock = new FakeClock();
    const service = fakeService({ step: 4 });
    const requests: { url: string; body: string }[] = [];
    const fetchImpl = (async (url: string, init: RequestInit) => {
      const body = init.body as string;
      requests.push({ url, body });
      const size = (JSON.parse(body) as { size?: number }).size;
      return new Response(JSON.stringify(await service.lease(size)), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    }) as unknown as typeof fetch;
    expect(
      () =>
        new IdpoolClient({
          endpoints: 'http://idpool',
          entities: { orders: { secret: 's', mode: 'monotonic', lease: {} } },
        }),
    ).toThrow(/only a trend entity/);
    const client = leasingClient(fetchImpl, clock);
    await client.leased('orders').open();
    expect(requests[0].url).toBe('http://idpool/apps/orders/segments');
    expect(requests[0].body).toBe('{}');
    expect(client.leased('orders').next()).toBe(0);
    expect(await client.take('orders', 2)).toEqual(['1', '2']);
    expect(() => client.leased('nope')).toThrow(TypeError);
    client.close();
  });

  it('IdpoolClient: a lease answered 429 or 503 with Retry-After is waited out within the deadline; the ids come', async () => {
    const clock = new FakeClock({ sleep: 'advance' });
    const service = fakeService({ step: 4 });
    const refusals = [
      [429, 'rate_limited'],
      [503, 'unavailable'],
    ] as const;
    const fetchImpl = (async (_url: string, init: RequestInit) => {
      const refusal = refusals[answered++];
      if (refusal) {
        const [status, code] = refusal;
        return new Response(JSON.stringify({ error: { code, message: 'wait' } }), {
          status,
          headers: { 'content-type': 'application/json', 'retry-after': '1' },
        });
      }
      const size = (JSON.parse(init.body as string) as { size?: number }).size;
      return new Response(JSON.stringify(await service.lease(size)), { status: 200 });
    }) as unknown as typeof fetch;
    let answered = 0;
    const client = leasingClient(fetchImpl, clock);
    const leased = client.leased('orders');
    // The old client threw rate_limited from the first lease.
    await expect(leased.nextAsync()).resolves.toBe(0);
    // Two refusals, the lease, and (its first id handed out) the next lease under way.
    expect(answered).toBeGreaterThanOrEqual(3);
    // Each Retry-After waited (beside nextAsync's own 2 s wait for the segment).
    expect(clock.sleeps.filter((ms) => ms === 1000)).toHaveLength(2);
    client.close();
  });

  it('IdpoolClient: a lease refused as larger than the entity allows (400) caps the size at the largest granted and leases that at once', async () => {
    const clock = new FakeClock();
    const service = fakeService({ step: 1000 });
    const asked: (number | undefined)[] = [];
    // A default trend entity: maxSizePerSecond 5000, so no lease above 5000.
    const fetchImpl = (async (_url: string, init: RequestInit) => {
      const size = (JSON.parse(init.body as string) as { size?: number }).size;
      asked.push(size);
      if (size !== undefined && size > 5000)
        return new Response(
          JSON.stringify({ error: { code: 'invalid_request', message: 'size must be an integer from 1 to 5000' } }),
          { status: 400 },
        );
      return new Response(JSON.stringify(await service.lease(size)), { status: 200 });
    }) as unknown as typeof fetch;
    const client = leasingClient(fetchImpl, clock);
    const leased = client.leased('orders');
    const ids: (number | bigint)[] = await leased.take(20_000);
    expect(new Set(ids).size).toBe(20_000);
    // 1000, 2000, 4000, then 8000 refused: 4000 at once, and never above it again.
    expect(asked.slice(0, 5)).toEqual([undefined, 2000, 4000, 8000, 4000]);
    expect(asked.slice(5).every((size) => size === 4000)).toBe(true);
    client.close();
  });
});
