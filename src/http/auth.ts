import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock';
import { RateLimitedError, UnauthorizedError } from '../errors';

/** The token of an `Authorization: Bearer <token>` header, or throws 401. */
export function bearerToken(req: Request): string {
  const header = req.headers.authorization;
  if (!header) throw new UnauthorizedError('missing Authorization: Bearer header');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new UnauthorizedError('Authorization header must be "Bearer <token>"');
  return match[1];
}

/** Constant-time equality of two tokens of any length (compared as SHA-256 digests). */
export function tokensEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

/**
 * Failed authentications per client address, in fixed windows. Past the
 * limit, a request from that address that does not authenticate is answered
 * 429 (whatever was wrong with it), while one that does still passes: a
 * valid secret cannot be guessed, so legitimate clients behind the same
 * address are not locked out by a prober. 30 failures per 10 s lets a
 * misconfigured client retrying with back-off stay under it, and holds a
 * prober to 3 guesses a second. Addresses are the socket's (no `trust proxy`).
 */
export class AuthFailureLimiter {
  private readonly windows: LRUCache<string, { start: number; failures: number }>;

  constructor(
    private readonly clock: Pick<Clock, 'monotonic'>,
    private readonly limit = 30,
    private readonly windowMs = 10_000,
    /** Addresses remembered; beyond it the least recently seen are forgotten (bounded memory). */
    maxAddresses = 100_000,
  ) {
    this.windows = new LRUCache({ max: maxAddresses });
  }

  /** Seconds until `address` may fail again, or 0 when it is under the limit. */
  blockedFor(address: string): number {
    const w = this.windows.get(address);
    if (!w) return 0;
    const left = w.start + this.windowMs - this.clock.monotonic();
    if (left <= 0) return 0;
    return w.failures >= this.limit ? Math.ceil(left / 1000) : 0;
  }

  fail(address: string): void {
    const now = this.clock.monotonic();
    const w = this.windows.get(address);
    if (!w || now >= w.start + this.windowMs) this.windows.set(address, { start: now, failures: 1 });
    else w.failures++;
  }

  /**
   * Runs `authenticate`; a 401 it throws is counted against the address, and
   * becomes 429 with Retry-After once the address is over the limit.
   */
  async guard<T>(address: string, authenticate: () => T | Promise<T>): Promise<T> {
    try {
      return await authenticate();
    } catch (err) {
      if (!(err instanceof UnauthorizedError)) throw err;
      const blocked = this.blockedFor(address);
      if (blocked > 0) throw new RateLimitedError('too many failed authentications from this address; retry later', blocked);
      this.fail(address);
      throw err;
    }
  }
}
