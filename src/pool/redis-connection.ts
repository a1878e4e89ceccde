import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisTopology } from '../config/config';
import { maskUrl } from '../logger';

/**
 * How long one Redis command may take before it fails (then 503). A pop or a
 * 10,000-id push takes a few ms here; 2 s is far above that and far below a
 * client's patience.
 */
const COMMAND_TIMEOUT_MS = 2000;
/** First TCP keep-alive probe after this much idle time: a half-open socket is found in seconds, not the kernel's two hours. */
const KEEP_ALIVE_MS = 5000;

/** Options every idpool Redis connection shares, whatever the topology. */
const FAIL_FAST: RedisOptions = {
  lazyConnect: true,
  // A request must not hang on a Redis that is down: no offline queue,
  // and one retry at most; the HTTP layer answers 503 with Retry-After.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  commandTimeout: COMMAND_TIMEOUT_MS,
  connectTimeout: COMMAND_TIMEOUT_MS,
  keepAlive: KEEP_ALIVE_MS,
  // No enableAutoPipelining: it can throw an uncaught TypeError out of a
  // callback and crash the process (redis/ioredis#1931), seen here twice:
  // when a batch failed as the connection closed, and when Redlock defined
  // its scripts while an auto-pipeline was open (redis-autopipeline.test.ts).
  // Commands from concurrent requests still share the socket without
  // waiting on each other.
  retryStrategy: (times) => Math.min(50 * times, 1000),
};

/** A connection to one server (directly or through Sentinel) or to a Cluster. */
export type RedisClient = Redis | Cluster;

type SingleOrSentinel = Exclude<RedisTopology, { kind: 'cluster' }>;

/** Options for a topology, without connecting (exported for tests). */
export function redisOptions(topology: SingleOrSentinel): RedisOptions {
  if (topology.kind === 'single') return { ...FAIL_FAST };
  return {
    ...FAIL_FAST,
    sentinels: topology.sentinels.map((s) => ({ host: s.host, port: s.port })),
    name: topology.masterName,
    role: 'master',
    username: topology.username,
    password: topology.password,
    sentinelUsername: topology.username,
    sentinelPassword: topology.password,
    // Reconnect as soon as a Sentinel announces +switch-master, instead of
    // waiting for the old master's socket to fail.
    failoverDetector: true,
    sentinelRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A demoted master answers READONLY: reconnect (ioredis asks the
    // Sentinels for the master again) and resend; READONLY means the command
    // did not run, so resending it cannot take ids twice.
    reconnectOnError: (err) => (/^READONLY/.test(err.message) ? 2 : false),
  };
}

/** Options of a Cluster client, without connecting (exported for tests). */
export function clusterOptions(topology: Extract<RedisTopology, { kind: 'cluster' }>): ClusterOptions {
  const { lazyConnect: _lazy, retryStrategy: _retry, ...perNode } = FAIL_FAST;
  return {
    lazyConnect: true,
    // As for one server: fail fast instead of queueing while the cluster
    // has no master for a slot (503 with Retry-After instead).
    enableOfflineQueue: false,
    scaleReads: 'master',
    redisOptions: { ...perNode, username: topology.username, password: topology.password },
    clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A moved slot, a failover or a slot being migrated (TRYAGAIN) is
    // retried after these delays within the command's timeout; ioredis
    // follows MOVED and ASK redirections itself.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 50,
    slotsRefreshTimeout: COMMAND_TIMEOUT_MS,
    // Topology changes are also found by MOVED replies and failed
    // connections; a periodic refresh catches a reshard that moved no key
    // idpool touched yet.
    slotsRefreshInterval: 5000,
  };
}

/** The masters of a client: every master of a Cluster, or the one server. */
export function mastersOf(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

/** Where Redis is, for logs: never a password. */
export function describeRedis(topology: RedisTopology): string {
  if (topology.kind === 'cluster') return `redis cluster via ${topology.nodes.map((s) => `${s.host}:${s.port}`).join(',')}`;
  if (topology.kind === 'sentinel') return `redis sentinel ${topology.masterName} via ${topology.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`;
  return `redis ${maskUrl(topology.url)}`;
}

/** Connects to Redis (one server, through Sentinel, or a Cluster), failing fast while it is down instead of queueing requests. */
export async function connectRedis(topology: RedisTopology): Promise<RedisClient> {
  let redis: RedisClient;
  if (topology.kind === 'cluster') redis = new Cluster(topology.nodes.map((n) => ({ host: n.host, port: n.port })), clusterOptions(topology));
  else if (topology.kind === 'single') redis = new Redis(topology.url, redisOptions(topology));
  else redis = new Redis(redisOptions(topology));
  // Errors reach the callers of each command; the connection itself retries.
  redis.on('error', () => undefined);
  await redis.connect();
  return redis;
}
