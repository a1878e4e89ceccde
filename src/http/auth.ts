import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { UnauthorizedError } from '../errors';

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
