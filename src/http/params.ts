import type { Request } from 'express';
import { KEY_PATTERN } from '../entities/entity';
import { InvalidRequestError } from '../errors';

// Path and query parameters shared by several routes; anything malformed is a
// 400 that changes nothing.

/** Page size of `GET /admin/apps` (docs/design.md "HTTP API"): a page costs one Redis round trip and one query whatever its size. */
const PAGE_DEFAULT = 100;
const PAGE_MAX = 1000;

/** `:key` of the path, checked against the entity key pattern. */
export function entityKeyParam(req: Request): string {
  const key = req.params.key as string;
  if (!KEY_PATTERN.test(key)) throw new InvalidRequestError('key must be 1-64 of A-Z a-z 0-9 _ - .');
  return key;
}

/** `?limit=` and `?after=` of a paged list. */
export function pageParams(req: Request): { after: string | undefined; limit: number } {
  const after = req.query.after;
  const limit = limitParam(req, PAGE_DEFAULT);
  if (after !== undefined && (typeof after !== 'string' || !KEY_PATTERN.test(after))) {
    throw new InvalidRequestError(
      'after must be an entity key (1-64 of A-Z a-z 0-9 _ - .), the "next" of the previous page',
    );
  }
  return { after, limit };
}

/** `?limit=`: an integer from 1 to PAGE_MAX, `fallback` when absent. */
export function limitParam(req: Request, fallback: number): number {
  const raw = req.query.limit;
  if (raw === undefined) return fallback;
  if (typeof raw !== 'string' || !/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > PAGE_MAX) {
    throw new InvalidRequestError(`limit must be an integer from 1 to ${PAGE_MAX}`);
  }
  return Number(raw);
}
