import type { Request } from 'express';
import { KEY_PATTERN } from '../entities/entity';
import { InvalidRequestError } from '../errors';

// Path and query parameters shared by several routes (and by the document, openapi/paths.ts); anything malformed is
// a 400 that changes nothing.

/** Page size of `GET /admin/apps` (docs/design.md "HTTP API"): a page costs one Redis round trip and one query whatever its size. */
export const PAGE_DEFAULT = 100;
export const PAGE_MAX = 1000;
/** Rows of the dashboard overview unless `?limit=` says otherwise: a screenful of the busiest entities. */
export const OPS_DEFAULT_ROWS = 50;

export function entityKeyParam(req: Request): string {
  const key = req.params.key as string;
  if (!KEY_PATTERN.test(key)) throw new InvalidRequestError('key must be 1-64 of A-Z a-z 0-9 _ - .');
  return key;
}

/** `?name=` when `valid` passes it, undefined when absent; anything else (a repeat, a wrong value) is a 400 with `message`. */
export function queryParam(req: Request, name: string, valid: Pick<RegExp, 'test'>, message: string) {
  const raw = req.query[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !valid.test(raw)) throw new InvalidRequestError(message);
  return raw;
}

export function limitParam(req: Request, fallback: number): number {
  const message = `limit must be an integer from 1 to ${PAGE_MAX}`;
  const limit = Number(queryParam(req, 'limit', /^\d{1,4}$/, message) ?? fallback);
  if (limit < 1 || limit > PAGE_MAX) throw new InvalidRequestError(message);
  return limit;
}

/**
 * The one integer field `name` of a JSON object body, or `?name=`, or undefined. Both only with one value (a client
 * sending `?count=3` and `{"count":2}` meant one of them, but which?). Anything else is a 400 naming `range`.
 */
export function integerField(req: Request, name: string, range: string): number | undefined {
  const body: unknown = req.body;
  if (body !== undefined && body !== null && !(typeof body === 'object' && !Array.isArray(body)))
    throw new InvalidRequestError(`request body must be a JSON object like {"${name}": 10}`);
  const unknownField = body ? Object.keys(body).find((f) => f !== name) : undefined;
  if (unknownField) throw new InvalidRequestError(`unknown field "${unknownField}"; only "${name}" is accepted`);
  const message = `${name} must be an integer from ${range}`;
  // A repeat, a sign or letters in the query are a 400 too.
  const raw = queryParam(req, name, /^\d{1,9}$/, message);
  const inQuery = raw === undefined ? undefined : Number(raw);
  if (!(body && name in body)) return inQuery;
  const value = (body as Record<string, unknown>)[name];
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new InvalidRequestError(message);
  if (inQuery !== undefined && inQuery !== value)
    throw new InvalidRequestError(
      `${name} is given twice and they differ: ?${name}=${inQuery} and {"${name}": ${value}} in the body; send one`,
    );
  return value;
}
