import { expect, it } from 'vitest';
import type { RefillLock } from '../../../src/pool/pool-store';

/** A refill lock with nothing held (the Redis one on keys of its own). */
export type RefillLockFactory = () => Promise<RefillLock>;

/**
 * What every {@link RefillLock} does, run against Redis and the in-process
 * lock alike: one holder per entity, entities apart, free again once
 * released, and a release that frees only its own hold.
 */
export function refillLockContract(make: RefillLockFactory): void {
  it('one holder per entity: a second acquire gets null, another entity its own lock', async () => {
    const lock = await make();
    const held = await lock.acquire('l-one');
    expect(held).not.toBeNull();
    expect(await lock.acquire('l-one')).toBeNull();
    const other = await lock.acquire('l-other');
    expect(other).not.toBeNull();
    await held!.release();
    await other!.release();
  });

  it('is free again once released', async () => {
    const lock = await make();
    await (await lock.acquire('l-again'))!.release();
    const again = await lock.acquire('l-again');
    expect(again).not.toBeNull();
    await again!.release();
  });

  it("a late second release does not free the next holder's lock", async () => {
    const lock = await make();
    const first = (await lock.acquire('l-late'))!;
    await first.release();
    const second = await lock.acquire('l-late');
    expect(second).not.toBeNull();
    await first.release();
    expect(await lock.acquire('l-late')).toBeNull();
    await second!.release();
    expect(await lock.acquire('l-late')).not.toBeNull();
  });
}
