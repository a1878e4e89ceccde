import { DEFAULT_PREFIX, entityKeys } from '../../src/redis/keys';

/** `idpool:{orders}`: what every key of one entity starts with, derived from `redis/keys.ts` (for SCAN/KEYS patterns and clearPrefix). */
export function entityKeyBase(entityKey: string, prefix = DEFAULT_PREFIX): string {
  return entityKeys(entityKey, prefix).ids.replace(/:ids$/, '');
}
