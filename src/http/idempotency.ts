import type { Request } from 'express';
import { InvalidRequestError } from '../errors';
import type { IdempotencyStore } from '../idempotency/store';
import { type TakenIds, listedIds } from '../pool/taken-ids';
import { idempotencyKey } from './openapi/schemas';

// The stores live in idempotency/; HTTP reads the header and runs a take once per key.

/** The request's `Idempotency-Key`, or undefined; 400 when it is malformed. */
export function idempotencyKeyOf(req: Pick<Request, 'get'>): string | undefined {
  const raw = req.get('idempotency-key');
  if (raw === undefined) return undefined;
  if (!idempotencyKey.safeParse(raw).success)
    throw new InvalidRequestError('Idempotency-Key must be 1-128 printable ASCII characters');
  return raw;
}

/**
 * `produce`'s ids, run once per Idempotency-Key if the request has one, and whether an earlier request stored them.
 * The stores keep ids as strings: only a request with a key pays for making them.
 */
export async function answerOnce(
  store: IdempotencyStore,
  req: Pick<Request, 'get'>,
  entityKey: string,
  count: number,
  produce: () => Promise<TakenIds>,
): Promise<{ ids: TakenIds; replayed: boolean }> {
  const requestKey = idempotencyKeyOf(req);
  if (requestKey === undefined) return { ids: await produce(), replayed: false };
  const { ids, replayed } = await store.once(entityKey, requestKey, count, async () => (await produce()).toArray());
  return { ids: listedIds(ids), replayed };
}
