import type { TakeResult } from '../../src/pool/pool-store';

/** A take's result with its ids as an array of strings, for toEqual. */
export function plainTake(result: TakeResult) {
  return result.kind === 'ok' ? { ...result, ids: result.ids.toArray() } : result;
}

/** The ids of a take that must have succeeded, as an array of strings. */
export function takenArray(result: TakeResult): string[] {
  if (result.kind !== 'ok') throw new Error(`the take answered ${result.kind}`);
  return result.ids.toArray();
}
