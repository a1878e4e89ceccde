import type { Clock } from './clock';

/** How {@link retryUntil} retries. */
export interface RetryOptions {
  /** The deadline's clock, and the pauses'. */
  clock: Pick<Clock, 'monotonic' | 'sleep'>;
  /** No retry starts after this many ms from the first attempt. */
  waitMs: number;
  /** Each pause: `[least, spread]`, least ms plus up to spread more at random, so processes racing for one lock do not retry in step. */
  pauseMs: readonly [number, number];
  /** Whether a failure is worth another attempt (a busy lock, a race); any other is thrown at once. */
  retryable: (err: unknown) => boolean;
}

/** Runs `attempt` again after a jittered pause while it fails retryably within `waitMs`, then throws the last failure. */
export async function retryUntil<T>(attempt: () => Promise<T>, o: RetryOptions): Promise<T> {
  const deadline = o.clock.monotonic() + o.waitMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (!o.retryable(err) || o.clock.monotonic() > deadline) throw err;
      await o.clock.sleep(o.pauseMs[0] + Math.random() * o.pauseMs[1]);
    }
  }
}
