import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { maskUrl } from '../logger';
import { MarkedCluster, MarkedRedis, replyWord } from './errors';
import { RedisStartError, addresses } from './start-error';
import { REDIS_SOCKET_TIMEOUT_MS, type RedisTopology } from './topology';

/** Longest one command may take (then 503): a take or a 10,000-id push takes a few ms, a client waits longer. */
const COMMAND_TIMEOUT_MS = 2000;
/** First TCP keep-alive probe after this idle time: finds an idle half-open connection (a busy one: the socket timeout). */
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
    // A request must not hang on a Redis that is down: 503 with Retry-After instead.
    enableOfflineQueue: false,
    // Commands left unanswered by a close fail at once ('lost'). With 1, ioredis flushed them on every second
    // close only, the others waited out commandTimeout: a refill caught by a Redis restart held its pool empty
    // 2 s after the server was back (redis-restart.test.ts).
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: COMMAND_TIMEOUT_MS,
    keepAlive: KEEP_ALIVE_MS,
    // Not sent again on the new connection: a take could pop ids nobody receives.
    autoResendUnfulfilledCommands: false,
    // No enableAutoPipelining: it can throw an uncaught TypeError out of a callback and crash the process
    // (redis/ioredis#1931, seen twice: redis-autopipeline.test.ts); concurrent commands share the socket anyway.
    // Reconnect attempts at most 500 ms apart: a healed network cut is found within connectTimeout + 500 ms.
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
    // Reconnect as soon as a Sentinel announces +switch-master, not when the old master's socket fails.
    failoverDetector: true,
    // A Sentinel behind a cut link must not hold the master lookup longer than a command.
    sentinelCommandTimeout: COMMAND_TIMEOUT_MS,
    sentinelRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A demoted master answers READONLY: ask the Sentinels again and resend (the command did not run, so no
    // ids are taken twice). One without its replicas (NOREPLICAS) is likely the minority side of a split: ask
    // again too, to find the promoted master when the split heals, not seconds later when it is demoted.
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
    // As for one server: 503 instead of queueing while a slot has no master.
    enableOfflineQueue: false,
    scaleReads: 'master',
    redisOptions: { ...perNode, username: topology.username, password: topology.password },
    clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A failover or a slot being migrated (TRYAGAIN) retried within the command's timeout; MOVED and ASK ioredis follows.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 50,
    slotsRefreshTimeout: COMMAND_TIMEOUT_MS,
    // Catches a reshard that moved no key idpool touched yet (MOVED replies find the others).
    slotsRefreshInterval: 5000,
  };
}

/** The masters of a client: every master of a Cluster, or the one server. */
export function mastersOf(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

/** Where Redis is, for logs: never a password. */
export function describeRedis(topology: RedisTopology): string {
  if (topology.kind === 'cluster') return `redis cluster via ${addresses(topology.nodes, ',')}`;
  if (topology.kind === 'sentinel')
    return `redis sentinel ${topology.masterName} via ${addresses(topology.sentinels, ',')}`;
  return `redis ${maskUrl(topology.url)}`;
}

/** Connections idpool closed itself: only these may stay ended. */
const closedOnPurpose = new WeakSet<RedisClient>();

/** After an end idpool did not ask for, the next connect: the retry strategy's longest wait. */
const CONNECT_AFTER_END_MS = 500;

/** Closes a connection for good: the only way an idpool connection stays ended. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  closedOnPurpose.add(redis);
  await redis.quit().catch(() => redis.disconnect());
}

/**
 * ioredis can end a connection for good unasked: the failover detector disconnecting it while a reconnect
 * still asks the Sentinels leaves status `end` (seen as one instance answering 503 for 30 s after a `kill -9`
 * of the master while its twin served). Such an end is followed by a new connect.
 */
function reconnectAfterUnaskedEnd(redis: RedisClient): void {
  redis.on('end', () => {
    if (closedOnPurpose.has(redis)) return;
    setTimeout(() => {
      if (!closedOnPurpose.has(redis) && redis.status === 'end') redis.connect().catch(() => undefined);
    }, CONNECT_AFTER_END_MS).unref();
  });
}

/** The first connect; through Sentinel it gives up after a first round none answered (ioredis would ask for ever). */
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
 * Connects to Redis (one server, Sentinel or Cluster), failing fast while it is down. A connection whose
 * replies stop is re-opened after `settings.socketTimeoutMs`, resolving the host name again.
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
