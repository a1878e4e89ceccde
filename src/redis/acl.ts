import { createHash } from 'node:crypto';
import { DEFAULT_PREFIX, entityKeys } from './keys';

/**
 * A Redis ACL user with only what its party needs. Redis checks every command and key a function runs against
 * its caller's ACL, so these lists name the commands inside the Lua functions too.
 */
export interface AclUser {
  readonly user: string;
  /** Rules after `-@all`, each one token (`+get`, `~idpool:*`). */
  readonly rules: readonly string[];
}

/** `FCALL idpool_pop`, plain `LPOP`, what `pop-2.lua` and the prelude's epoch check run, and PING (clients' health check). */
const CONSUMER_COMMANDS = ['+fcall|idpool_pop', '+lpop', '+llen', '+get', '+info|server', '+info|replication', '+ping'];

/**
 * A Cluster client's slot map (SLOTS, SHARDS or NODES by library; ioredis checks INFO too), ASKING, and its
 * connection's state (ioredis's CLIENT SETNAME, READONLY, READWRITE; seen in ACL LOG by redis-acl.test.ts).
 */
const CLUSTER_CLIENT_COMMANDS =
  '+cluster|slots +cluster|shards +cluster|nodes +cluster|info +asking +readonly +readwrite +client|setname'.split(' ');

/**
 * Every command the service sends, directly or inside its functions (redis-acl.test.ts runs it as this user).
 * No CONFIG: `CONFIG GET requirepass` reads the password, and the memory check falls back to `INFO memory`.
 */
const SERVICE_COMMANDS = [
  // The function libraries: loaded at start and again when a server lacks them, then called;
  // a release's removed once no instance of it runs (redis/library-pruner.ts).
  '+function|load +function|list +function|delete +fcall',
  // A push and a take: one MULTI of FCALL, RPUSH or LPOP, and FCALL (push_open-6.lua, take_open-4.lua); DISCARD if ioredis abandons one.
  '+multi +exec +discard',
  // Inside the functions (pool, refill lock, rate limit, idempotent answers and their byte caps),
  // and sent directly (pool levels, idempotency claims and byte counters).
  '+get +set +del +exists +llen +lpop +rpush +rename +incrby +decrby +mget +pexpire +pttl +time',
  '+zadd +zcard +zremrangebyscore +zrangebyscore +zrem +zpopmin',
  // The snowflake worker leases' record (worker_*.lua; redis-worker-holders.ts reads the ceilings directly).
  '+hget +zscore +zmscore',
  // The registration generation.
  '+incr',
  // The fleet (fleet/redis-fleet-store.ts): alarm records in a capped stream, and each instance's heartbeat in a hash.
  '+xadd +xrevrange +hset +hgetall +hdel',
  // Business numbers (number_*.lua, number-store.ts): the period table, the fences, the live list's end; the
  // idempotency byte counters' expiry.
  '+hmget +hkeys +pexpireat',
  // The epoch (run_id, master_replid), the memory check, the client's ready check; readiness.
  '+info +ping',
  // A URL naming a database other than 0; closing the connection.
  '+select +quit',
]
  .flatMap((group) => group.split(' '))
  // Cluster: the slot map, its health, and the redirection during a slot migration.
  .concat(CLUSTER_CLIENT_COMMANDS);

/** A direct consumer of one entity: the guarded pop and LPOP on its pool list and epoch key only (`cluster`: and the topology reads a Cluster client needs). */
export function consumerAcl(entityKey: string, o: { user?: string; cluster?: boolean; prefix?: string } = {}): AclUser {
  const keys = entityKeys(entityKey, o.prefix ?? DEFAULT_PREFIX);
  const commands = o.cluster ? [...CONSUMER_COMMANDS, ...CLUSTER_CLIENT_COMMANDS] : CONSUMER_COMMANDS;
  // Read and write on both: FCALL declares its keys read-write, whatever the function does with them.
  return { user: o.user ?? `idpool-pop-${entityKey}`, rules: [...commands, `~${keys.ids}`, `~${keys.epoch}`] };
}

/** The idpool service: every key under its prefix and the commands it sends, nothing server-wide. */
export function serviceAcl(user = 'idpool', prefix = DEFAULT_PREFIX): AclUser {
  return { user, rules: [...SERVICE_COMMANDS, `~${prefix}:*`] };
}

/** The SHA-256 of a password as ACL rules take it (`#<hex>`): the rule lines never hold the password itself. */
export function aclPasswordHash(password: string): string {
  return createHash('sha256').update(password).digest('hex');
}

/** `ACL SETUSER …` for redis-cli, shell-quoted; `reset` first, so running it again replaces the user. */
export function aclSetUser(acl: AclUser, passwordHash: string): string {
  return ['ACL', 'SETUSER', acl.user, 'reset', 'on', `#${passwordHash}`, '-@all', 'resetchannels', ...acl.rules]
    .map(quote)
    .join(' ');
}

/** The same user as a line of a `users.acl` file (`aclfile`). */
export function aclFileLine(acl: AclUser, passwordHash: string): string {
  return ['user', acl.user, 'on', `#${passwordHash}`, '-@all', 'resetchannels', ...acl.rules].join(' ');
}

/** Double-quotes a token holding a character a shell would interpret (`#`, `|`, `~`, `{`); none holds a quote or `$`. */
function quote(token: string): string {
  return /^[A-Za-z0-9_.@:+-]+$/.test(token) ? token : `"${token}"`;
}
