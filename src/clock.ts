/**
 * Time as idpool sees it. Injected everywhere time matters so tests can roll
 * the clock back, expire leases and exhaust sequences without sleeping.
 */
export interface Clock {
  /** Wall-clock milliseconds since the Unix epoch (may jump, may go back). */
  now(): number;
  /** Monotonic milliseconds from an arbitrary origin (never goes back). */
  monotonic(): number;
  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
