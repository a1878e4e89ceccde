import type { TakeResult } from '../../src/pool/pool-store';

/** A take's result with its ids as an array of strings, for toEqual. */
export function plainTake(result: TakeResult) {
  return result.kind === 'ok' ? { ...result, ids: result.ids.toArray() } : result;
}
