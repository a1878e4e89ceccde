/** Time as idpool sees it, injected so tests roll it back, expire leases and exhaust sequences without sleeping. */
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
  // A timer fires 1 ms or more late: a wait of up to 1 ms (a spent snowflake sequence) yields to the event loop
  // until Date.now() moves instead, or up to half of each ms of a 2,048-ids-per-ms sequence goes unused.
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

/** What `work` answers, or `timedOut` after `ms` (the work goes on, its failure handled here); leaves no timer. */
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
