import { randomBytes } from 'node:crypto';
import { DEFAULT_PREFIX, entityKeys } from '../../src/redis/keys';

/** `idpool:{orders}`: what every key of one entity starts with, derived from `redis/keys.ts` (for SCAN/KEYS patterns and clearPrefix). */
export function entityKeyBase(entityKey: string, prefix = DEFAULT_PREFIX): string {
  return entityKeys(entityKey, prefix).ids.replace(/:ids$/, '');
}

/** `base` with a random tail (`orders_3fa9c1`): an entity key no other test, or earlier run, uses. */
export function uniqueKey(base: string): string {
  return `${base}_${randomBytes(3).toString('hex')}`;
}
