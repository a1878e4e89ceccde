import { expect, it } from 'vitest';
import { ConflictError, PoolExhaustedError } from '../../../src/errors';
import type { IdempotencyStore } from '../../../src/idempotency/store';

/** Batches of consecutive ids from 100 on, counting how many were produced. */
export function batches() {
  let next = 100;
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    produce: (count: number) => async () => {
      calls++;
      return Array.from({ length: count }, () => String(next++));
    },
  };
}

/**
 * What every {@link IdempotencyStore} does, run against the memory store,
 * the Redis store on a fake Redis (test/unit) and on a real one
 * (test/integration): the first answer of a key is the answer, a retry gets
 * it without producing ids, another count is a conflict, a failed request is
 * forgotten, and a concurrent retry waits for the first answer. What needs
 * time to pass (an answer's TTL, a claim left by a crashed instance) is in
 * test/unit/idempotency.test.ts, on the fake clock.
 */
export function idempotencyStoreContract(make: () => Promise<IdempotencyStore>): void {
  it('answers the same key with the same ids, a new key with new ids', async () => {
    const store = await make();
    const b = batches();
    const first = await store.once('orders', 'k1', 3, b.produce(3));
    const again = await store.once('orders', 'k1', 3, b.produce(3));
    const other = await store.once('orders', 'k2', 3, b.produce(3));
    expect(first).toEqual({ ids: ['100', '101', '102'], replayed: false });
    expect(again).toEqual({ ids: ['100', '101', '102'], replayed: true });
    expect(other).toEqual({ ids: ['103', '104', '105'], replayed: false });
    expect(b.calls).toBe(2);
  });

  it('keeps keys of different entities apart', async () => {
    const store = await make();
    const b = batches();
    await store.once('orders', 'k', 1, b.produce(1));
    expect(await store.once('users', 'k', 1, b.produce(1))).toEqual({ ids: ['101'], replayed: false });
  });

  it('refuses the same key with another count, producing nothing', async () => {
    const store = await make();
    const b = batches();
    await store.once('orders', 'k', 3, b.produce(3));
    await expect(store.once('orders', 'k', 4, b.produce(4))).rejects.toBeInstanceOf(ConflictError);
    expect(b.calls).toBe(1);
  });

  it('forgets a failed request so a retry runs again', async () => {
    const store = await make();
    const b = batches();
    await expect(
      store.once('orders', 'k', 1, async () => {
        throw new PoolExhaustedError('empty');
      }),
    ).rejects.toBeInstanceOf(PoolExhaustedError);
    expect(await store.once('orders', 'k', 1, b.produce(1))).toEqual({ ids: ['100'], replayed: false });
  });

  it('lets a concurrent request with the same key wait for the first answer instead of taking a batch', async () => {
    const store = await make();
    const b = batches();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = store.once('orders', 'k', 2, async () => {
      await gate;
      return b.produce(2)();
    });
    const retry = store.once('orders', 'k', 2, b.produce(2));
    await new Promise((r) => setImmediate(r));
    release();
    const [a, c] = await Promise.all([slow, retry]);
    expect(a).toEqual({ ids: ['100', '101'], replayed: false });
    expect(c).toEqual({ ids: ['100', '101'], replayed: true });
    expect(b.calls).toBe(1);
  });
}
