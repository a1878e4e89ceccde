import { createHash } from 'node:crypto';
import { DEFAULT_PREFIX, entityKeys } from './keys';

/**
 * Redis ACL users that give each party only what it needs (Redis 7 or
 * later: functions and `+command|first-arg` rules).
 *
 * Redis checks every command a function or script runs, and every key it
 * touches, against the ACL of the user who called it, so these lists name
 * the commands inside the Lua functions too, and a push or reset through
 * FCALL fails for a user whose keys do not include the fence.
 */
export interface AclUser {
  /** The ACL user name. */
  readonly user: string;
  /** Rules after `-@all`, each one token (`+get`, `~idpool:*`). */
  readonly rules: readonly string[];
}

/**
 * The consumer's commands: `FCALL idpool_pop` and plain `LPOP`, plus what
 * `idpool_pop` runs inside (`pop-2.lua` and the epoch check of
 * `_prelude.lua`: GET of the epoch key, LLEN, LPOP, `INFO server` and
 * `INFO replication`). PING touches nothing and client libraries use it
 * as a health check.
 */
const CONSUMER_COMMANDS = ['+fcall|idpool_pop', '+lpop', '+llen', '+get', '+info|server', '+info|replication', '+ping'];

/**
 * What a Cluster client needs to find the node of a slot and follow a
 * migration: the slot map (CLUSTER SLOTS, SHARDS or NODES, by client
 * library; ioredis reads SLOTS and checks CLUSTER INFO before it is ready),
 * ASKING, and its own connection's state (ioredis names its slot-refresh
 * connections with CLIENT SETNAME, sends READONLY to replicas and READWRITE
 * once one is promoted; seen in ACL LOG by redis-acl.test.ts).
 */
const CLUSTER_CLIENT_COMMANDS =
  '+cluster|slots +cluster|shards +cluster|nodes +cluster|info +asking +readonly +readwrite +client|setname'.split(' ');

/**
 * The commands the service sends, directly or from inside its functions;
 * a command added to the service must be added
 * here (test/integration/redis-acl.test.ts runs the service as this user).
 * CONFIG is left out on purpose: `CONFIG GET requirepass` reads the
 * server's password, and the memory check falls back to `INFO memory`.
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

export interface ConsumerAclOptions {
  user?: string;
  /** The consumer talks to a Redis Cluster: add the topology reads its client needs. */
  cluster?: boolean;
  prefix?: string;
}

/**
 * A direct consumer of one entity: the guarded pop and LPOP on that
 * entity's pool list and epoch key only.
 */
export function consumerAcl(entityKey: string, o: ConsumerAclOptions = {}): AclUser {
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

/**
 * `ACL SETUSER …` for redis-cli (at its prompt, piped in, or after
 * `redis-cli` on a shell line: tokens a shell would read are quoted).
 * `reset` first, so running it again replaces the user instead of adding to it.
 */
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
