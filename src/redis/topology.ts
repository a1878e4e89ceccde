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
 * Default of IDPOOL_REDIS_SOCKET_TIMEOUT_MS (commands pending, no byte back: re-opened): a command's 2 s and one
 * more tell a dead link from a slow command; test/partition/ measured ids within 3 s of any cut's heal.
 */
export const REDIS_SOCKET_TIMEOUT_MS = 3000;
