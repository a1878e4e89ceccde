import { describe, expect, it } from 'vitest';
import { FakeClock, settle } from '../support/clock';
import { entityConfig } from '../support/entity';
import { waitFor } from '../support/wait';

describe('test kit: FakeClock', () => {
  it('sleeps wait for advance(), and wake in due order', async () => {
    const clock = new FakeClock({ now: 1_000 });
    const woke: number[] = [];
    void clock.sleep(30).then(() => woke.push(30));
    void clock.sleep(10).then(() => woke.push(10));
    await settle();
    expect(woke).toEqual([]);
    expect(clock.waiting).toBe(2);
    clock.advance(9);
    await settle();
    expect(woke).toEqual([]);
    clock.advance(25);
    await settle();
    expect(woke).toEqual([10, 30]);
    expect([clock.now(), clock.monotonic()]).toEqual([1_034, 34]);
  });

  it("jump() moves only the wall clock; an aborted sleep ends at once; 'advance' mode moves time itself", async () => {
    const clock = new FakeClock({ now: 5_000 });
    clock.jump(-2_000);
    expect([clock.now(), clock.monotonic()]).toEqual([3_000, 0]);
    const abort = new AbortController();
    const pending = clock.sleep(60_000, abort.signal);
    abort.abort();
    await pending;
    expect(clock.waiting).toBe(0);

    const self = new FakeClock({ sleep: 'advance', tickMs: 1 });
    await self.sleep(100);
    expect(self.monotonic()).toBe(100);
    expect(self.monotonic()).toBe(101); // every read moved it on by tickMs
    expect(self.sleeps).toEqual([100]);
  });
});

describe('test kit: waitFor and entityConfig', () => {
  it('waitFor answers the first truthy value, fails with its message, and passes a check error on unless told to retry', async () => {
    let n = 0;
    expect(await waitFor(() => ++n >= 1 && 'ready')).toBe('ready');
    await expect(waitFor(() => false, { timeoutMs: 0, message: 'the pool to fill' })).rejects.toThrow(
      'timed out after 0 ms waiting for the pool to fill',
    );
    await expect(
      waitFor(() => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(
      waitFor(
        () => {
          throw new Error('not yet');
        },
        { timeoutMs: 0, retryErrors: true },
      ),
    ).rejects.toThrow('(last error: not yet)');
  });

  it('entityConfig is a complete entity whose key names it unless overridden', () => {
    expect(entityConfig()).toMatchObject({
      key: 'orders',
      name: 'orders',
      mode: 'monotonic',
      step: 100,
      maxPoolSize: 1000,
      interval: 100,
      startOffset: 0n,
    });
    expect(entityConfig({ key: 'pay', step: 10 })).toMatchObject({ key: 'pay', name: 'pay', step: 10 });
  });
});
