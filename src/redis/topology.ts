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
