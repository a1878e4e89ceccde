import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { maskUrl } from '../logger';
import { MarkedCluster, MarkedRedis, replyWord } from './errors';
import { RedisStartError } from './start-error';
import { REDIS_SOCKET_TIMEOUT_MS, type RedisTopology } from './topology';

/**
 * How long one Redis command may take before it fails (then 503). A take or a
 * 10,000-id push takes a few ms here; 2 s is far above that and far below a
 * client's patience.
 */
const COMMAND_TIMEOUT_MS = 2000;
/**
 * First TCP keep-alive probe after this much idle time. Keep-alive only
 * probes a socket with nothing unacknowledged, so it finds a half-open
 * connection that is idle; one carrying commands is found by the socket
 * timeout instead.
 */
const KEEP_ALIVE_MS = 5000;

/** How connections notice that replies stopped (IDPOOL_REDIS_SOCKET_TIMEOUT_MS). */
export interface RedisConnectionSettings {
  /** A connection with commands pending and no reply for this long is dropped and re-opened. */
  socketTimeoutMs: number;
}

const DEFAULT_SETTINGS: RedisConnectionSettings = { socketTimeoutMs: REDIS_SOCKET_TIMEOUT_MS };

/** Options every idpool Redis connection shares, whatever the topology (each connection gets its own copy). */
function failFast(settings: RedisConnectionSettings): RedisOptions {
  return {
    lazyConnect: true,
    // A request must not hang on a Redis that is down: no offline queue; the
    // HTTP layer answers 503 with Retry-After.
    enableOfflineQueue: false,
    // Commands a connection left unanswered when it closed fail at once
    // (MaxRetriesPerRequestError, 'lost'), on every close. With 1, ioredis
    // flushed them on every second close only, and with no resend it drops
    // them otherwise: each waited out commandTimeout, so a refill caught by a
    // Redis restart held its entity's pool empty 2 s after the server was
    // back (redis-restart.test.ts).
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: COMMAND_TIMEOUT_MS,
    keepAlive: KEEP_ALIVE_MS,
    // Not sent again on the new connection: a take could pop ids nobody
    // receives, and the caller has its failure already (above).
    autoResendUnfulfilledCommands: false,
    // No enableAutoPipelining: it can throw an uncaught TypeError out of a
    // callback and crash the process (redis/ioredis#1931), seen here twice:
    // when a batch failed as the connection closed, and when Redlock defined
    // its scripts while an auto-pipeline was open (redis-autopipeline.test.ts).
    // Commands from concurrent requests still share the socket without
    // waiting on each other.
    // Reconnect attempts at most 500 ms apart: after a network cut heals, the
    // next attempt is at most connectTimeout + 500 ms away.
    retryStrategy: (times) => Math.min(50 * times, 500),
    socketTimeout: settings.socketTimeoutMs,
  };
}

/** A connection to one server (directly or through Sentinel) or to a Cluster. */
export type RedisClient = Redis | Cluster;

type SingleOrSentinel = Exclude<RedisTopology, { kind: 'cluster' }>;

/** Options for a topology, without connecting (exported for tests). */
export function redisOptions(
  topology: SingleOrSentinel,
  settings: RedisConnectionSettings = DEFAULT_SETTINGS,
): RedisOptions {
  if (topology.kind === 'single') return failFast(settings);
  return {
    ...failFast(settings),
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
    // A Sentinel behind a cut link must not hold the master lookup longer than a command.
    sentinelCommandTimeout: COMMAND_TIMEOUT_MS,
    sentinelRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A demoted master answers READONLY: reconnect (ioredis asks the
    // Sentinels for the master again) and resend; READONLY means the command
    // did not run, so resending it cannot take ids twice. A master that lost
    // its replicas (NOREPLICAS, min-replicas-to-write) is most likely on the
    // minority side of a split: ask the Sentinels again too, so idpool finds
    // the promoted master as soon as the split heals instead of when the
    // Sentinels get round to demoting the old one (seconds later).
    reconnectOnError: (err) => {
      const reply = replyWord(err);
      return reply === 'READONLY' ? 2 : reply === 'NOREPLICAS' ? 1 : false;
    },
  };
}

/** Options of a Cluster client, without connecting (exported for tests). */
export function clusterOptions(
  topology: Extract<RedisTopology, { kind: 'cluster' }>,
  settings: RedisConnectionSettings = DEFAULT_SETTINGS,
): ClusterOptions {
  const { lazyConnect: _lazy, retryStrategy: _retry, ...perNode } = failFast(settings);
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
  if (topology.kind === 'cluster')
    return `redis cluster via ${topology.nodes.map((s) => `${s.host}:${s.port}`).join(',')}`;
  if (topology.kind === 'sentinel')
    return `redis sentinel ${topology.masterName} via ${topology.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`;
  return `redis ${maskUrl(topology.url)}`;
}

/** Connections idpool closed itself: only these may stay ended. */
const closedOnPurpose = new WeakSet<RedisClient>();

/**
 * After an end idpool did not ask for, the next connect is this far away:
 * the same bound as the retry strategy's longest wait.
 */
const CONNECT_AFTER_END_MS = 500;

/** Closes a connection for good: the only way an idpool connection stays ended. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  closedOnPurpose.add(redis);
  await redis.quit().then(
    () => undefined,
    () => redis.disconnect(),
  );
}

/**
 * ioredis can end a connection for good without being asked: when the
 * Sentinel failover detector disconnects it while a reconnect is still
 * asking the Sentinels for the master, that lookup throws "Connection is
 * closed." and the client moves to status `end`, where it never reconnects
 * (seen as one instance answering 503 for 30 s after a `kill -9` of the
 * master while its twin served). An end idpool did not ask for is followed
 * by a new connect.
 */
function reconnectAfterUnaskedEnd(redis: RedisClient): void {
  redis.on('end', () => {
    if (closedOnPurpose.has(redis)) return;
    setTimeout(() => {
      if (!closedOnPurpose.has(redis) && redis.status === 'end') redis.connect().catch(() => undefined);
    }, CONNECT_AFTER_END_MS).unref();
  });
}

/**
 * The first connect. Through Sentinel, ioredis would ask the Sentinels again
 * for ever: a start-up gives up after the first round none of them answered.
 */
function firstConnect(redis: RedisClient, topology: RedisTopology): Promise<void> {
  if (topology.kind !== 'sentinel') return redis.connect();
  return new Promise((resolve, reject) => {
    const gaveUp = (err: Error) => {
      if (err.message.startsWith('All sentinels are unreachable')) reject(err);
    };
    redis.on('error', gaveUp);
    redis
      .connect()
      .then(resolve, reject)
      .finally(() => redis.off('error', gaveUp));
  });
}

/**
 * Connects to Redis (one server, through Sentinel, or a Cluster), failing
 * fast while it is down instead of queueing requests. A connection whose
 * replies stop is dropped after `settings.socketTimeoutMs` and re-opened,
 * resolving the host name again (net.connect looks it up on every attempt).
 */
export async function connectRedis(
  topology: RedisTopology,
  settings: RedisConnectionSettings = DEFAULT_SETTINGS,
): Promise<RedisClient> {
  let redis: RedisClient;
  if (topology.kind === 'cluster')
    redis = new MarkedCluster(
      topology.nodes.map((n) => ({ host: n.host, port: n.port })),
      clusterOptions(topology, settings),
    );
  else if (topology.kind === 'single') redis = new MarkedRedis(topology.url, redisOptions(topology, settings));
  else redis = new MarkedRedis(redisOptions(topology, settings));
  // Errors reach the callers of each command; the connection itself retries. The last one says why a first connect failed.
  let lastError: unknown;
  redis.on('error', (err: unknown) => (lastError = err));
  try {
    await firstConnect(redis, topology);
  } catch (err) {
    redis.disconnect();
    throw new RedisStartError(topology, err, lastError);
  }
  // Only once connected: a client whose first connect failed is dropped by the caller and must not retry forever.
  reconnectAfterUnaskedEnd(redis);
  return redis;
}
