/**
 * Time as idpool sees it. Injected everywhere time matters so tests can roll
 * the clock back, expire leases and exhaust sequences without sleeping.
 */
export interface Clock {
  /** Wall-clock milliseconds since the Unix epoch (may jump, may go back). */
  now(): number;
  /** Monotonic milliseconds from an arbitrary origin (never goes back). */
  monotonic(): number;
  /** Resolves after `ms` of this clock's time, or at once when `signal` aborts (nothing left pending). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  // A timer fires a millisecond or more late, however short the wait: a wait
  // of up to 1 ms (a snowflake sequence spent until Date.now() turns) yields
  // to the event loop until the clock has moved instead: a late timer leaves
  // up to half of each ms of a spent 2,048-ids-per-ms sequence unused.
  sleep: (ms, signal) => (ms > 1 ? timer(ms, signal) : untilNow(Date.now() + ms)),
};

/** Resolves once Date.now() reaches `at`, checking once per event-loop turn. */
function untilNow(at: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (Date.now() >= at ? resolve() : setImmediate(check));
    check();
  });
}

/** Resolves after `ms`, or at once when `signal` aborts, clearing the timer so nothing holds the process. */
function timer(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const pending = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(pending);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** The reason a finished wait's sleep is aborted with: `abort()` without one builds a DOMException, stack and all, each time. */
const WAIT_OVER = 'wait over';

/**
 * What `work` answers, or `timedOut` once `ms` of `clock`'s time pass
 * first (the work goes on; its failure is then handled here, no one's
 * unhandled rejection). The sleep ends with the race, leaving no timer.
 */
export async function within<T, U>(clock: Clock, work: Promise<T>, ms: number, timedOut: U): Promise<T | U> {
  work.catch(() => undefined);
  if (ms <= 0) return timedOut;
  const waited = new AbortController();
  try {
    return await Promise.race([work, clock.sleep(ms, waited.signal).then(() => timedOut)]);
  } finally {
    waited.abort(WAIT_OVER);
  }
}
