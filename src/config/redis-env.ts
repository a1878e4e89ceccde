/** The Redis variables (IDPOOL_REDIS_URL, _SENTINELS, _CLUSTER_NODES and their credentials) mapped onto a `RedisTopology`. */
import { ConfigError } from '../errors';
import { DEFAULT_SENTINEL_MASTER, type RedisTopology } from '../redis/topology';
import { type EnvReader, quoted } from './env-reader';

/** `host:port` lists (IDPOOL_REDIS_SENTINELS, IDPOOL_REDIS_CLUSTER_NODES). */
function hostPorts(name: string, raw: string): { host: string; port: number }[] {
  return raw.split(',').map((part) => {
    const m = /^\s*([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})\s*$/.exec(part);
    const port = Number(m?.[2]);
    if (!m || port < 1 || port > 65535)
      throw new ConfigError(name, `must be host:port[,host:port...], got ${quoted(raw)}`);
    return { host: m[1].replace(/^\[|\]$/g, ''), port };
  });
}

/** IDPOOL_REDIS_URL, IDPOOL_REDIS_SENTINELS (+ _SENTINEL_MASTER) or IDPOOL_REDIS_CLUSTER_NODES (+ _USERNAME, _PASSWORD): at most one topology. */
export function redisTopology(r: EnvReader): RedisTopology | undefined {
  const given = ['IDPOOL_REDIS_URL', 'IDPOOL_REDIS_SENTINELS', 'IDPOOL_REDIS_CLUSTER_NODES'].filter(
    (name) => r.raw(name) !== undefined,
  );
  if (given.length > 1) throw new ConfigError(given[1], `set only one of ${given.join(', ')} (one Redis topology)`);
  const url = r.url('IDPOOL_REDIS_URL', /^rediss?:\/\/[^/]/, 'redis://host:6379/0');
  if (url) {
    // A URL carries its own credentials; two places for one password is one too many.
    for (const name of ['IDPOOL_REDIS_USERNAME', 'IDPOOL_REDIS_PASSWORD']) {
      if (r.raw(name) !== undefined)
        throw new ConfigError(
          name,
          'is for IDPOOL_REDIS_SENTINELS and IDPOOL_REDIS_CLUSTER_NODES; with IDPOOL_REDIS_URL put the credentials in the URL (redis://user:pass@host:6379/0)',
        );
    }
    return { kind: 'single', url };
  }
  const credentials = { username: r.raw('IDPOOL_REDIS_USERNAME'), password: r.raw('IDPOOL_REDIS_PASSWORD') };
  const sentinels = r.raw('IDPOOL_REDIS_SENTINELS');
  if (sentinels) {
    const masterName = r.raw('IDPOOL_REDIS_SENTINEL_MASTER') ?? DEFAULT_SENTINEL_MASTER;
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(masterName))
      throw new ConfigError('IDPOOL_REDIS_SENTINEL_MASTER', `must be 1-64 of A-Z a-z 0-9 _ - ., got "${masterName}"`);
    return {
      kind: 'sentinel',
      sentinels: hostPorts('IDPOOL_REDIS_SENTINELS', sentinels),
      masterName,
      ...credentials,
    };
  }
  const nodes = r.raw('IDPOOL_REDIS_CLUSTER_NODES');
  return nodes ? { kind: 'cluster', nodes: hostPorts('IDPOOL_REDIS_CLUSTER_NODES', nodes), ...credentials } : undefined;
}
