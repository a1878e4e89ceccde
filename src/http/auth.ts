import { FixedWindow } from '../fixed-window';
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
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

/** Tokens are compared as SHA-256 digests: equal lengths for timingSafeEqual, whatever was sent. */
const digest = (token: string) => createHash('sha256').update(token).digest();

/** Which credential a bearer token is: each opens a different set of routes (README "Security"). */
export type TokenKind = 'admin' | 'ops' | 'metrics';

/** The configured tokens, as digests; a presented one is compared with all: timing tells neither kinds nor closeness. */
export class ServiceTokens {
  private readonly digests: [TokenKind, Buffer][];

  constructor(tokens: Partial<Record<TokenKind, string>>) {
    this.digests = Object.entries(tokens as Record<TokenKind, string | undefined>)
      .filter((entry): entry is [TokenKind, string] => entry[1] !== undefined)
      .map(([kind, token]) => [kind, digest(token)]);
  }

  kindOf(token: string, accepted: readonly TokenKind[]): TokenKind | undefined {
    const presented = digest(token);
    let found: TokenKind | undefined;
    for (const [kind, expected] of this.digests)
      if (timingSafeEqual(presented, expected) && accepted.includes(kind)) found = kind;
    return found;
  }
}

/**
 * What failed authentications are counted per: an IPv4 address, or an IPv6 /64 (a client given a /64 has 2^64
 * addresses in it); an IPv4-mapped address (`::ffff:a.b.c.d`, a dual-stack socket's view) counts as its IPv4 one.
 */
export function limiterKey(address: string): string {
  if (isIPv4(address)) return address;
  const hextets = expandIPv6(address);
  if (!hextets) return address;
  if (hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff)
    return [hextets[6] >> 8, hextets[6] & 0xff, hextets[7] >> 8, hextets[7] & 0xff].join('.');
  const prefix = hextets.slice(0, 4).map((h) => h.toString(16));
  return `${prefix.join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (zone id dropped), or undefined when it is not one. */
function expandIPv6(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '').toLowerCase();
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const b = v4.slice(1).map(Number);
    if (b.some((n) => n > 255)) return undefined;
    text = `${text.slice(0, v4.index)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const halves = text.split('::').map((part) => (part === '' ? [] : part.split(':')));
  if (halves.length > 2) return undefined;
  const [head, tail = []] = halves;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return groups.map((g) => Number.parseInt(g, 16));
}

/**
 * Failed authentications per client address ({@link limiterKey}, the socket's), in fixed windows. 30 per 10 s keeps
 * a client retrying with back-off under it and a prober to 3 guesses a second. Past it, service tokens are refused
 * before any compare, the right one too (else an operator-chosen token could still be guessed at full speed); entity
 * secrets (256 random bits) are still compared, so clients behind a prober's address keep working.
 */
export class AuthFailureLimiter {
  private readonly limit = 30;
  private readonly windowMs = 10_000;
  /** Addresses remembered: beyond 100,000 the least recently seen are forgotten (bounded memory). */
  private readonly windows = new LRUCache<string, FixedWindow>({ max: 100_000 });

  constructor(private readonly clock: Pick<Clock, 'monotonic'>) {}

  /** Seconds until `address` may fail again, or 0 when it is under the limit. */
  blockedFor(address: string): number {
    const w = this.windows.get(limiterKey(address));
    if (!w || w.count < this.limit) return 0;
    return Math.max(0, Math.ceil(w.leftAt(this.clock.monotonic()) / 1000));
  }

  fail(address: string): void {
    const key = limiterKey(address);
    let w = this.windows.get(key);
    if (!w) this.windows.set(key, (w = new FixedWindow(this.windowMs)));
    w.at(this.clock.monotonic()).count++;
  }

  /** A service token check: refused with 429 while `address` is blocked, without running `authenticate`. */
  async guardToken<T>(address: string, authenticate: () => T | Promise<T>): Promise<T> {
    this.refuseIfBlocked(address);
    try {
      return await authenticate();
    } catch (err) {
      if (err instanceof UnauthorizedError) this.fail(address);
      throw err;
    }
  }

  /** An entity secret check: always runs `authenticate`; its 401 is counted, and a 429 once the address is blocked. */
  async guardSecret<T>(address: string, authenticate: () => T | Promise<T>): Promise<T> {
    try {
      return await authenticate();
    } catch (err) {
      if (!(err instanceof UnauthorizedError)) throw err;
      this.refuseIfBlocked(address);
      this.fail(address);
      throw err;
    }
  }

  private refuseIfBlocked(address: string): void {
    const blocked = this.blockedFor(address);
    if (blocked > 0)
      throw new RateLimitedError('too many failed authentications from this address; retry later', blocked);
  }
}
