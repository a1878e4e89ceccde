import type { RedisClient } from './connection';

/** The value of `field` in the text of an INFO reply (`field:value` lines), or undefined. */
export function infoField(info: string, field: string): string | undefined {
  const line = info.split(/\r?\n/).find((l) => l.startsWith(`${field}:`));
  return line?.slice(field.length + 1).trim();
}

/** The server and version from `INFO server`: `Valkey 8.0.1` (whose `redis_version` is the Redis it mimics), `Dragonfly v1.25.0`, `Redis 6.2.14`, or `the server`. */
export function serverRelease(info: string): string {
  const name = infoField(info, 'server_name');
  const named = name && infoField(info, `${name}_version`);
  if (name && named) return `${name[0].toUpperCase()}${name.slice(1)} ${named}`;
  const dragonfly = infoField(info, 'dragonfly_version');
  if (dragonfly) return `Dragonfly ${dragonfly}`;
  const redis = infoField(info, 'redis_version');
  return redis ? `Redis ${redis}` : 'the server';
}

/** The epoch `run_id:master_replid` (docs/design.md invariant 4) from `INFO server replication`, as the Lua functions compare it. */
export function epochOf(info: string): string {
  const runId = infoField(info, 'run_id');
  const replId = infoField(info, 'master_replid');
  if (!runId || !replId) throw new Error('INFO did not report run_id and master_replid');
  return `${runId}:${replId}`;
}

/** The Redis server's clock (TIME) in Unix ms: the running service compares its own with it (worker/clock-watch.ts). */
export async function redisTimeMs(redis: RedisClient): Promise<number> {
  const [seconds, micros] = (await redis.time()) as unknown as [string, string];
  return Number(seconds) * 1000 + Number(micros) / 1000;
}
