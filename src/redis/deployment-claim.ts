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
  let owner: DeploymentRecord | undefined;
  try {
    owner = stored ? (JSON.parse(stored) as DeploymentRecord) : undefined;
  } catch {
    owner = { id: String(stored), database: 'unknown' };
  }
  // Gone between the SET and the GET (deleted by hand): claim it again.
  if (!owner) return claimRedisKeys(redis, prefix, ours);
  if (owner.id !== ours.id) throw new DeploymentConflictError(prefix, owner, ours);
}
