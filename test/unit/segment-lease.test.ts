import { describe, expect, it } from 'vitest';
import { RateLimitedError, UnavailableError } from '../../src/errors';
import { MemoryEntityRateLimit } from '../../src/pool/rate-limit';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { SegmentLeaser } from '../../src/segment/lease';
import { IdStride } from '../../src/segment/stride';
import { FakeClock } from '../support/clock';

const trend = { key: 'orders', mode: 'trend', step: 100, maxSizePerSecond: 150, delta: 1, remainder: 0 } as const;

function leaser(rate: { admit(entityKey: string, count: number, maxPerSecond: number): Promise<void> }) {
  const reported: string[] = [];
  const leases = new SegmentLeaser({
    allocator: new FakeSegmentAllocator(),
    stride: new IdStride(),
    rate,
    events: {
      leased: (key, count) => void reported.push(`leased ${key} ${count}`),
      rateLimited: (key) => void reported.push(`rate limited ${key}`),
    },
  });
  return { leases, reported };
}

describe('SegmentLeaser events', () => {
  it('reports a lease, and a 429 as rate limited', async () => {
    const { leases, reported } = leaser(new MemoryEntityRateLimit(new FakeClock()));
    expect((await leases.lease(trend)).count).toBe(100);
    await expect(leases.lease(trend)).rejects.toBeInstanceOf(RateLimitedError);
    expect(reported).toEqual(['leased orders 100', 'rate limited orders']);
  });

  it('a limit that could not be checked (Redis down) is no rate limit: nothing is reported', async () => {
    const down = new UnavailableError('Redis is unavailable');
    const { leases, reported } = leaser({ admit: () => Promise.reject(down) });
    await expect(leases.lease(trend)).rejects.toBe(down);
    expect(reported).toEqual([]);
  });
});
