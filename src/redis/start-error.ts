import type { RedisTopology } from './topology';

/**
 * Why a first connection to Redis failed: which Redis (never a password) and the cause an operator acts on,
 * from the last error ioredis emitted (it rejects with "Connection is closed."); the original stays `cause`.
 */
export class RedisStartError extends Error {
  constructor(topology: RedisTopology, rejection: unknown, lastEmitted: unknown) {
    super(`${whichRedis(topology)}: ${causeOf(lastEmitted ?? rejection, topology.kind)}`, { cause: rejection });
    this.name = 'RedisStartError';
  }
}

/** A server without Redis Functions (before 7.0, Dragonfly, FUNCTION renamed away), which every take needs. */
export class RedisUnsupportedError extends Error {
  constructor(topology: RedisTopology, release: string) {
    super(
      `${whichRedis(topology)}: ${release} has no Redis Functions (FUNCTION is an unknown command there); ` +
        'idpool needs Redis >= 7.0 or Valkey >= 7.2 with FUNCTION and FCALL',
    );
    this.name = 'RedisUnsupportedError';
  }
}

/** `host:port` of each node. */
export const addresses = (nodes: readonly { host: string; port: number }[], separator = ', ') =>
  nodes.map((n) => `${n.host}:${n.port}`).join(separator);

function whichRedis(topology: RedisTopology): string {
  if (topology.kind === 'cluster') return `Redis Cluster via ${addresses(topology.nodes)} (IDPOOL_REDIS_CLUSTER_NODES)`;
  if (topology.kind === 'sentinel')
    return `Redis Sentinel master "${topology.masterName}" via ${addresses(topology.sentinels)} (IDPOOL_REDIS_SENTINELS)`;
  if (!URL.canParse(topology.url)) return 'Redis (IDPOOL_REDIS_URL)';
  const u = new URL(topology.url);
  return `Redis at ${u.hostname}:${u.port || '6379'} (IDPOOL_REDIS_URL)`;
}

function causeOf(err: unknown, kind: RedisTopology['kind']): string {
  const e = (err ?? {}) as { code?: string; message?: string; lastNodeError?: unknown };
  const message = e.message ?? String(err);
  const sentinels = /^All sentinels are unreachable\..*Last error: (.*)$/s.exec(message);
  if (sentinels) return `no Sentinel answered for the master (${causeOf({ message: sentinels[1] }, kind)})`;
  if (e.lastNodeError !== undefined) return `no Cluster node answered (${causeOf(e.lastNodeError, kind)})`;
  if (e.code === 'ECONNREFUSED') return 'connection refused: nothing listens there (is redis-server running?)';
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return 'host name not found';
  if (e.code === 'ETIMEDOUT' || /timed out|Socket timeout/i.test(message)) return 'timed out: no answer';
  if (message.startsWith('NOAUTH'))
    return `a password is needed: put it in ${kind === 'single' ? 'IDPOOL_REDIS_URL (redis://:PASSWORD@host:port)' : 'IDPOOL_REDIS_PASSWORD'}`;
  if (message.startsWith('WRONGPASS')) return 'wrong password (or user name): the server refused them';
  if (message.includes('called without any password configured'))
    return 'a password was given, but the server has none: remove it';
  if (/unknown command 'sentinel'/i.test(message)) return 'a Redis server answered, not a Sentinel';
  if (/cluster support disabled/i.test(message)) return 'a Redis server answered, not a Cluster node';
  if (message === 'Connection is closed.') return 'unreachable: refused, or closed before it was ready';
  return message;
}
