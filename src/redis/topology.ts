// Without ioredis: config/ maps the environment onto these.

/** Where Redis is (docs/design.md "Redis topologies"). */
export type RedisTopology =
  | { readonly kind: 'single'; readonly url: string }
  | {
      readonly kind: 'cluster';
      /** Seed nodes; the rest of the cluster is discovered from them. */
      readonly nodes: readonly { readonly host: string; readonly port: number }[];
      /** Credentials for every node. */
      readonly username?: string;
      readonly password?: string;
    }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly { readonly host: string; readonly port: number }[];
      /** The monitored master's name (`sentinel monitor <name> …`). */
      readonly masterName: string;
      /** Credentials for the Sentinels and the Redis nodes they point to. */
      readonly username?: string;
      readonly password?: string;
    };

/** The master name Sentinel's own sample configuration uses. */
export const DEFAULT_SENTINEL_MASTER = 'mymaster';

/**
 * Default of IDPOOL_REDIS_SOCKET_TIMEOUT_MS: a connection with commands
 * pending and no byte back for this long is destroyed and re-opened. A
 * command times out at 2 s; a second more tells a dead link from one slow
 * command, and the partition suite (test/partition/) measured ids again
 * within 3 s of the heal with it, whatever the length of the cut.
 */
export const REDIS_SOCKET_TIMEOUT_MS = 3000;
