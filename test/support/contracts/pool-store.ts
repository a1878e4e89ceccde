import { expect, it } from 'vitest';
import type { PoolStore } from '../../../src/pool/pool-store';
import { plainTake } from '../taken';

/** A pool store with empty pools (the Redis one on keys of its own). */
export type PoolStoreFactory = () => Promise<PoolStore>;

/** An empty pool of this store's epoch, ready to be pushed into. */
async function fresh(store: PoolStore, entityKey: string): Promise<void> {
  await store.reset(entityKey, -1n);
}

/**
 * What every {@link PoolStore} does, run against Redis and the in-process
 * store alike: ids come out in the order pushed, all or nothing; the fence
 * refuses anything not above what was pushed; sizes and levels count per entity.
 */
export function poolStoreContract(make: PoolStoreFactory): void {
  it('takes ids in the order pushed, all or nothing', async () => {
    const store = await make();
    await fresh(store, 'c-take');
    expect(await store.push('c-take', ['10', '11', '12', '13'], 10n, 13n)).toEqual({ kind: 'ok', size: 4 });
    expect(plainTake(await store.take('c-take', 3, 0))).toEqual({ kind: 'ok', ids: ['10', '11', '12'], remaining: 1 });
    expect(plainTake(await store.take('c-take', 2, 0))).toEqual({ kind: 'short', size: 1 });
    expect(await store.size('c-take')).toBe(1);
    expect(plainTake(await store.take('c-take', 1, 0))).toEqual({ kind: 'ok', ids: ['13'], remaining: 0 });
  });

  it('next is the id the next take hands out, none when the pool is empty', async () => {
    const store = await make();
    await fresh(store, 'c-next');
    expect(await store.next('c-next')).toBeUndefined();
    await store.push('c-next', ['10', '11'], 10n, 11n);
    await store.push('c-next', ['20'], 20n, 20n);
    expect(await store.next('c-next')).toBe(10n);
    await store.take('c-next', 2, 0);
    expect(await store.next('c-next')).toBe(20n);
    await store.take('c-next', 1, 0);
    expect(await store.next('c-next')).toBeUndefined();
  });

  it('the fence refuses a segment that does not start above everything pushed, also after a discard', async () => {
    const store = await make();
    await fresh(store, 'c-fence');
    expect(await store.push('c-fence', ['5', '6'], 5n, 6n)).toEqual({ kind: 'ok', size: 2 });
    expect(await store.push('c-fence', ['6', '7'], 6n, 7n)).toEqual({ kind: 'fenced' });
    expect(await store.push('c-fence', ['1'], 1n, 1n)).toEqual({ kind: 'fenced' });
    await store.discard('c-fence');
    expect(await store.size('c-fence')).toBe(0);
    expect(await store.push('c-fence', ['6'], 6n, 6n)).toEqual({ kind: 'fenced' });
    expect(await store.push('c-fence', ['7'], 7n, 7n)).toEqual({ kind: 'ok', size: 1 });
  });

  it('raiseFence drops the ready ids and refuses a segment reserved before the line moved', async () => {
    const store = await make();
    await fresh(store, 'c-raise');
    expect(await store.push('c-raise', ['5', '6'], 5n, 6n)).toEqual({ kind: 'ok', size: 2 });
    await store.raiseFence('c-raise', 2n ** 53n + 9n);
    expect(await store.size('c-raise')).toBe(0);
    // A refill that reserved 7..8 before the raise: refused, nothing below the new line comes out.
    expect(await store.push('c-raise', ['7', '8'], 7n, 8n)).toEqual({ kind: 'fenced' });
    const above = (2n ** 53n + 10n).toString();
    expect(await store.push('c-raise', [above], 2n ** 53n + 10n, 2n ** 53n + 10n)).toEqual({ kind: 'ok', size: 1 });
    // Never lowered.
    await store.raiseFence('c-raise', 3n);
    expect(await store.push('c-raise', ['9'], 9n, 9n)).toEqual({ kind: 'fenced' });
  });

  it('a refused push leaves the pool as it was, empty or not, and counts nothing as pushed', async () => {
    const store = await make();
    await fresh(store, 'c-refused');
    expect(await store.push('c-refused', ['1', '4', '7'], 1n, 7n)).toEqual({ kind: 'ok', size: 3 });
    expect(await store.push('c-refused', ['4', '5'], 4n, 5n)).toEqual({ kind: 'fenced' });
    expect(await store.levels(['c-refused'])).toEqual([{ size: 3, taken: 0 }]);
    expect(plainTake(await store.take('c-refused', 3, 0))).toEqual({ kind: 'ok', ids: ['1', '4', '7'], remaining: 0 });
    expect(await store.push('c-refused', ['7', '8'], 7n, 8n)).toEqual({ kind: 'fenced' });
    expect(await store.levels(['c-refused'])).toEqual([{ size: 0, taken: 3 }]);
    expect(await store.push('c-refused', ['8', '9'], 8n, 9n)).toEqual({ kind: 'ok', size: 2 });
    expect(plainTake(await store.take('c-refused', 2, 0))).toEqual({ kind: 'ok', ids: ['8', '9'], remaining: 0 });
  });

  it('sizes and levels answer per entity, unknown ones empty; levels count what was taken', async () => {
    const store = await make();
    await fresh(store, 'c-l1');
    await fresh(store, 'c-l2');
    await store.push('c-l1', ['1', '2', '3'], 1n, 3n);
    await store.push('c-l2', ['1'], 1n, 1n);
    await store.take('c-l1', 2, 0);
    expect(await store.sizes(['c-l1', 'c-l2', 'c-none'])).toEqual([1, 1, 0]);
    expect(await store.levels(['c-l1', 'c-l2', 'c-none'])).toEqual([
      { size: 1, taken: 2 },
      { size: 1, taken: 0 },
      { size: 0, taken: 0 },
    ]);
  });

  it('fences answer per entity, in order, over more keys than one read takes; none where nothing was pushed', async () => {
    const store = await make();
    // 2,345 keys: past the Redis store's MGETs of 1,000; every 97th has a fence of its own.
    const keys = Array.from({ length: 2345 }, (_, i) => `c-fences-${i}`);
    const pushed = keys.filter((_, i) => i % 97 === 0);
    for (const [n, key] of pushed.entries()) {
      await fresh(store, key);
      await store.push(key, [String(n + 10)], BigInt(n + 10), BigInt(n + 10));
    }
    const fences = await store.fences(keys);
    expect(fences).toHaveLength(keys.length);
    expect(fences).toEqual(keys.map((_, i) => (i % 97 === 0 ? BigInt(i / 97 + 10) : undefined)));
    expect(await store.fences([])).toEqual([]);
  });

  it('a per-second limit refuses takes beyond it with a time to retry', async () => {
    const store = await make();
    await fresh(store, 'c-rate');
    const ids = Array.from({ length: 40 }, (_, i) => String(i + 1));
    await store.push('c-rate', ids, 1n, 40n);
    // 20 takes of 1 at 5 per second: even if a second boundary falls among them, at most 10 pass.
    const results = [];
    for (let i = 0; i < 20; i++) results.push(await store.take('c-rate', 1, 5));
    const ok = results.filter((r) => r.kind === 'ok');
    const limited = results.filter((r) => r.kind === 'rate_limited');
    expect(ok.length).toBeGreaterThanOrEqual(5);
    expect(ok.length).toBeLessThanOrEqual(10);
    expect(ok.length + limited.length).toBe(20);
    for (const r of limited) expect(r.kind === 'rate_limited' && r.retryAfterMs).toBeGreaterThan(0);
    expect(await store.size('c-rate')).toBe(40 - ok.length);
  });
}
