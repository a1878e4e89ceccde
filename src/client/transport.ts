import {
  IdpoolClientError,
  IdpoolConflictError,
  IdpoolHttpError,
  IdpoolInvalidRequestError,
  IdpoolNetworkError,
  IdpoolNotFoundError,
  IdpoolRateLimitedError,
  IdpoolTimeoutError,
  IdpoolUnauthorizedError,
  IdpoolUnavailableError,
} from './errors';

/** Time as the client sees it; tests hand in a fake. */
export interface ClientClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** What tests hand the client in place of the network, the clock and the idempotency keys (`seams.ts`). */
export interface ClientSeams {
  fetch?: typeof fetch;
  clock?: ClientClock;
  idempotencyKey?: () => string;
}

export const systemClientClock: ClientClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** The client options the transport reads, and their defaults. */
export const TRANSPORT_DEFAULTS = {
  timeoutMs: 2000,
  deadlineMs: 15_000,
  maxAttempts: 20,
  downForMs: 1000,
  maxRetryAfterMs: 30_000,
} as const;

export type TransportOptions = Record<keyof typeof TRANSPORT_DEFAULTS, number> & {
  endpoints: readonly string[];
  fetch: typeof fetch;
  clock: ClientClock;
  newIdempotencyKey: () => string;
};

/** Longest back-off of a failing endpoint: a dead one costs one connection attempt per 8 s. */
const MAX_BACKOFF_MS = 8000;

export interface Request {
  method: 'GET' | 'POST';
  path: string;
  secret: string;
  body?: unknown;
  /** The caller's Idempotency-Key for every attempt of this POST; else one made for it. */
  idempotencyKey?: string;
  /** A 429 waits its `Retry-After` and asks again within the deadline (a lease: its caller waits for ids, not refusals). */
  waitOnRateLimit?: boolean;
}

interface Endpoint {
  readonly url: string;
  /** Not asked again before this time: from Retry-After, or backing off after failures. */
  notBefore: number;
  /** Failures in a row, for the back-off. */
  streak: number;
}

/**
 * 503 codes about one entity that every instance answers alike (period spent, held, ledger awaiting reconcile): the
 * endpoint still serves other entities, so the call ends at once and no endpoint is marked down.
 */
const ENTITY_REFUSALS: ReadonlySet<string> = new Set(['period_exhausted', 'entity_held', 'gapless_ledger_behind']);

/** The typed error of an error answer's status; any other status is an {@link IdpoolHttpError}. */
const BY_STATUS: Record<number, typeof IdpoolHttpError> = {
  400: IdpoolInvalidRequestError,
  401: IdpoolUnauthorizedError,
  404: IdpoolNotFoundError,
  409: IdpoolConflictError,
  429: IdpoolRateLimitedError,
};

/** What a failed attempt leads to: the caller gets it, the call waits and asks again, or the endpoint is down. */
type Verdict = 'final' | 'refused' | 'down' | { waitMs: number };

/**
 * Sends one request with failover: network errors, timeouts and 5xx move on to the next endpoint (not asked again
 * before its `Retry-After`), 4xx go back to the caller; `pool_exhausted` waits its Retry-After for this request only.
 * Every attempt of one POST carries the same `Idempotency-Key`, so a retry gets the ids already handed out.
 */
export class Transport {
  private readonly endpoints: Endpoint[];
  /** Index of the endpoint that answered last; the next request starts there. */
  private current = 0;

  constructor(private readonly options: TransportOptions) {
    this.endpoints = options.endpoints.map((url) => ({ url: url.replace(/\/+$/, ''), notBefore: 0, streak: 0 }));
  }

  async send<T>(req: Request): Promise<T> {
    const { clock, maxAttempts, deadlineMs } = this.options;
    const deadline = clock.now() + deadlineMs;
    const headers: Record<string, string> = { authorization: `Bearer ${req.secret}`, accept: 'application/json' };
    if (req.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = req.idempotencyKey ?? this.options.newIdempotencyKey();
    }
    const init = { method: req.method, headers, body: req.body === undefined ? undefined : JSON.stringify(req.body) };
    const failures: IdpoolClientError[] = [];
    const unavailable = (reason: string) => new IdpoolUnavailableError(failures, reason);
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      const index = this.pick();
      const endpoint = this.endpoints[index];
      const wait = endpoint.notBefore - clock.now();
      if (wait > 0) {
        if (clock.now() + wait >= deadline)
          throw unavailable(`no endpoint may be asked again within the ${deadlineMs} ms deadline`);
        await clock.sleep(wait);
      }
      const left = deadline - clock.now();
      if (left <= 0) break;
      try {
        const result = await this.attempt<T>(endpoint, req.path, init, Math.min(this.options.timeoutMs, left));
        endpoint.notBefore = 0;
        endpoint.streak = 0;
        this.current = index;
        return result;
      } catch (err) {
        const failure = err as IdpoolClientError;
        const verdict = this.verdict(req, failure);
        if (verdict === 'final') throw failure;
        failures.push(failure);
        if (verdict === 'refused')
          throw new IdpoolUnavailableError(failures, 'refused on every instance', { refused: true });
        if (verdict === 'down') {
          this.markDown(endpoint, index, failure);
          continue;
        }
        // The refusal holds for this request only: wait it out, then ask again (a pool_exhausted the next endpoint).
        const rateLimited = failure instanceof IdpoolHttpError && failure.status === 429;
        if (clock.now() + verdict.waitMs >= deadline)
          throw rateLimited ? failure : unavailable(`its Retry-After ends past the ${deadlineMs} ms deadline`);
        if (!rateLimited) this.current = (index + 1) % this.endpoints.length;
        await clock.sleep(verdict.waitMs);
      }
    }
    throw unavailable(
      failures.length >= maxAttempts ? `${failures.length} attempts failed` : `deadline of ${deadlineMs} ms passed`,
    );
  }

  private verdict(req: Request, failure: IdpoolClientError): Verdict {
    if (!(failure instanceof IdpoolHttpError)) return 'down';
    if (failure.status === 429 && req.waitOnRateLimit && failure.retryAfterMs !== undefined)
      return { waitMs: failure.retryAfterMs };
    if (failure.status < 500) return 'final';
    if (failure.status !== 503) return 'down';
    if (ENTITY_REFUSALS.has(failure.code)) return 'refused';
    if (failure.code === 'pool_exhausted') return { waitMs: failure.retryAfterMs ?? this.options.downForMs };
    return 'down';
  }

  // The server's Retry-After is obeyed as given; without one, the back-off doubles with each failure in a row.
  private markDown(endpoint: Endpoint, index: number, failure: IdpoolClientError): void {
    endpoint.streak++;
    const retryAfterMs = failure instanceof IdpoolHttpError ? failure.retryAfterMs : undefined;
    const backoff = Math.min(this.options.downForMs * 2 ** (endpoint.streak - 1), MAX_BACKOFF_MS);
    endpoint.notBefore = this.options.clock.now() + (retryAfterMs ?? backoff);
    this.current = (index + 1) % this.endpoints.length;
  }

  // The first endpoint, in turn from the current one, that may be asked now; if none may, the one free soonest.
  private pick(): number {
    const now = this.options.clock.now();
    const n = this.endpoints.length;
    let soonest = this.current;
    for (let i = 0; i < n; i++) {
      const index = (this.current + i) % n;
      if (this.endpoints[index].notBefore <= now) return index;
      if (this.endpoints[index].notBefore < this.endpoints[soonest].notBefore) soonest = index;
    }
    return soonest;
  }

  private async attempt<T>(endpoint: Endpoint, path: string, init: RequestInit, timeoutMs: number): Promise<T> {
    const controller = new AbortController();
    // Only the timer aborts: an aborted signal means the attempt timed out.
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await this.options.fetch(endpoint.url + path, { ...init, signal: controller.signal });
      text = await res.text();
    } catch (err) {
      if (controller.signal.aborted) throw new IdpoolTimeoutError(endpoint.url, timeoutMs);
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new IdpoolNetworkError(
        endpoint.url,
        cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err)),
        err,
      );
    } finally {
      clearTimeout(timer);
    }
    const { status } = res;
    const parsed = parseJson(text);
    if (status >= 200 && status < 300) {
      if (parsed === undefined) throw new IdpoolNetworkError(endpoint.url, `answer ${status} is not JSON`);
      return parsed as T;
    }
    const error = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    const code = typeof error?.code === 'string' ? error.code : `http_${status}`;
    const message = typeof error?.message === 'string' ? error.message : text.slice(0, 200) || 'no message';
    // A refusal's Retry-After is never waited for here: the caller gets it as said (the next period may be an hour off).
    const cap = ENTITY_REFUSALS.has(code) ? Number.POSITIVE_INFINITY : this.options.maxRetryAfterMs;
    const wait = retryAfterMs(res.headers.get('retry-after'), this.options.clock.now(), cap);
    throw new (BY_STATUS[status] ?? IdpoolHttpError)(status, code, message, endpoint.url, wait);
  }
}

/** A body's JSON; undefined when empty or not JSON. */
export function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; capped; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number, cap: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(ms, 0), cap);
}
