import { ConfigError } from '../errors';
import { deploymentKey } from './keys';
import type { RedisClient } from './connection';

/** A deployment as recorded in Redis: its id (from its database) and that database, to name both in a refusal. */
export interface DeploymentRecord {
  readonly id: string;
  readonly database: string;
}

/** Another deployment (database) owns the keys under this prefix: sharing would mix two number lines' pools and fences. */
class DeploymentConflictError extends ConfigError {
  constructor(prefix: string, owner: DeploymentRecord, ours: DeploymentRecord) {
    super(
      'IDPOOL_REDIS_KEY_PREFIX',
      `the Redis keys ${prefix}:* belong to deployment ${owner.id} (database ${owner.database}); this process's database ${ours.database} is deployment ${ours.id}. Two deployments on the same keys would share pools: give this one another Redis database (redis://host:6379/N) or another key prefix (IDPOOL_REDIS_KEY_PREFIX). If this database replaced the other on purpose, delete the key ${deploymentKey(prefix)} and the old pools (docs/ha.md "Restores")`,
    );
    this.name = 'DeploymentConflictError';
  }
}

/**
 * Records this deployment as the owner of the keys under `prefix` (SET NX), or refuses another's
 * ({@link DeploymentConflictError}); the same one (its database restored from its own backup too) passes.
 */
export async function claimRedisKeys(redis: RedisClient, prefix: string, ours: DeploymentRecord): Promise<void> {
  const key = deploymentKey(prefix);
  const value = JSON.stringify({ id: ours.id, database: ours.database });
  if ((await redis.set(key, value, 'NX')) === 'OK') return;
  const stored = await redis.get(key);
  // Gone between the SET and the GET (deleted by hand): claim it again.
  if (stored === null) return claimRedisKeys(redis, prefix, ours);
  let owner: Partial<DeploymentRecord> | null = null;
  try {
    owner = JSON.parse(stored) as Partial<DeploymentRecord> | null;
  } catch {
    // Not a record: named as it is stored.
  }
  // Anything but a record ('', 'null' written by hand) is another's: refused, where it used to claim again forever.
  const id = typeof owner?.id === 'string' ? owner.id : stored;
  if (id !== ours.id) throw new DeploymentConflictError(prefix, { id, database: owner?.database ?? 'unknown' }, ours);
}
