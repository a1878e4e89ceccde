import { expect, it } from 'vitest';
import { RateLimitedError } from '../../../src/errors';
import type { EntityRateLimit } from '../../../src/pool/rate-limit';

/**
 * A rate limit with nothing counted yet (the Redis one on keys of its own),
 * and `freshSecond`, which returns at the start of a second of the limit's
 * clock (the Redis server's, or a fake clock moved on), so the cases that
 * count within one second do not see it turn.
 */
export type EntityRateLimitFactory = () => Promise<{ limit: EntityRateLimit; freshSecond: () => Promise<void> }>;

async function refusal(admit: Promise<void>): Promise<RateLimitedError> {
  const err = await admit.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RateLimitedError);
  return err as RateLimitedError;
}

/**
 * What every {@link EntityRateLimit} does, run against Redis and the
 * in-process limit alike: ids counted per second up to the limit, a
 * refusal that counts nothing and says when to come back, entities apart,
 * a limit of 0 as none.
 */
export function entityRateLimitContract(make: EntityRateLimitFactory): void {
  it('admits up to the limit within a second, then refuses with 429 and Retry-After 1, counting nothing refused', async () => {
    const { limit, freshSecond } = await make();
    await freshSecond();
    await limit.admit('r-up', 6, 10);
    await limit.admit('r-up', 4, 10);
    const err = await refusal(limit.admit('r-up', 1, 10));
    expect([err.statusCode, err.code, err.retryAfterSeconds]).toEqual([429, 'rate_limited', 1]);
    expect(err.message).toBe('entity r-up is limited to 10 ids per second');
    await freshSecond();
    await limit.admit('r-up', 10, 10);
  });

  it('a request larger than the limit never fits, even in a fresh second', async () => {
    const { limit, freshSecond } = await make();
    await freshSecond();
    await refusal(limit.admit('r-large', 11, 10));
    await limit.admit('r-large', 10, 10);
  });

  it('counts each entity apart', async () => {
    const { limit, freshSecond } = await make();
    await freshSecond();
    await limit.admit('r-a', 10, 10);
    await limit.admit('r-b', 10, 10);
    await refusal(limit.admit('r-a', 1, 10));
  });

  it('a limit of 0 is none, and counts nothing', async () => {
    const { limit, freshSecond } = await make();
    await freshSecond();
    await limit.admit('r-none', 1_000_000, 0);
    await limit.admit('r-none', 10, 10);
  });
}
