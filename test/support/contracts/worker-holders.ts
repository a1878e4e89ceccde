import { expect, it } from 'vitest';
import type { WorkerHolders } from '../../../src/worker/worker-holders';

/**
 * What every {@link WorkerHolders} does, run against the Redis functions and
 * `FakeWorkerHolders` alike: a claim replaces the holder and reads the
 * ceiling before raising it, only the holder renews or releases, a renewal
 * only raises the ceiling, a clean stop brings it down to what was used.
 */
export function workerHoldersContract(make: () => Promise<WorkerHolders>): void {
  it('a claim replaces the holder and reads the ceiling before raising it; a replaced holder is refused', async () => {
    const holders = await make();
    expect(await holders.claim(9, 'a', 5_000)).toEqual({ previousCeilingMs: 0, own: false });
    expect(await holders.renew(9, 'a', 7_000)).toBe(true);
    // Raised only: a renewal with a clock set back leaves it.
    expect(await holders.renew(9, 'a', 6_000)).toBe(true);
    expect(await holders.ceilings([9, 10])).toEqual(new Map([[9, 7_000]]));
    // A restored database gives worker 9 to b: it learns a's ceiling, and a is refused from then on.
    expect(await holders.claim(9, 'b', 4_000, 'lost-b')).toEqual({ previousCeilingMs: 7_000, own: false });
    expect(await holders.renew(9, 'a', 9_000)).toBe(false);
    expect(await holders.release(9, 'a', 1)).toBe(false);
    expect(await holders.ceilings([9])).toEqual(new Map([[9, 7_000]]));
    expect(await holders.renew(9, 'b', 7_100)).toBe(true);
  });

  it('a holder taking back the worker id the database forgot finds its own token; a clean stop lowers the ceiling to what was used', async () => {
    const holders = await make();
    await holders.claim(4, 'b', 8_000);
    expect(await holders.claim(4, 'b2', 9_000, 'b')).toEqual({ previousCeilingMs: 8_000, own: true });
    expect(await holders.release(4, 'b2', 7_500)).toBe(true);
    expect(await holders.ceilings([4])).toEqual(new Map([[4, 7_500]]));
    // The token went with it: nobody's own any more.
    expect(await holders.claim(4, 'c', 8_000, 'b2')).toEqual({ previousCeilingMs: 7_500, own: false });
  });

  it('a token lost altogether (Redis restarted empty) is written back by the holder that renews first', async () => {
    const holders = await make();
    await holders.claim(3, 'c', 1_000);
    await holders.release(3, 'c', 500);
    expect(await holders.renew(3, 'd', 2_000)).toBe(true);
    expect(await holders.renew(3, 'c', 2_000)).toBe(false);
    expect(await holders.ceilings([3])).toEqual(new Map([[3, 2_000]]));
  });
}
