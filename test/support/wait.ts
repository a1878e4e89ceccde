/** Resolves after `ms` of real time. For integration tests; unit tests use a {@link FakeClock}. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What is left of `T` once a value is known truthy. */
export type Truthy<T> = Exclude<T, false | 0 | 0n | '' | null | undefined>;

export interface WaitOptions {
  /** Give up after this long (default 10 s: generous on a loaded 2-core machine). */
  timeoutMs?: number;
  /** Pause between checks (default 50 ms). */
  intervalMs?: number;
  /** What is awaited, for the error when it does not come ("instance b to serve the entity"). */
  message?: string;
  /** A check that throws counts as "not yet" (a server still starting); by default the error fails the wait at once. */
  retryErrors?: boolean;
}

/**
 * Checks `condition` until it returns something truthy and resolves to that.
 * Rejects after `timeoutMs` with the message (and, with `retryErrors`, the
 * last error seen), so a wait that never ends says what it waited for.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitOptions = {}): Promise<Truthy<T>> {
  const { timeoutMs = 10_000, intervalMs = 50, message = 'condition', retryErrors = false } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as Truthy<T>;
    } catch (err) {
      if (!retryErrors) throw err;
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const cause =
        lastError === undefined
          ? ''
          : ` (last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${message}${cause}`);
    }
    await sleep(intervalMs);
  }
}
