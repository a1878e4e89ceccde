import { type FleetKeys, fleetKeys } from '../redis/keys';
import type { RedisClient } from '../redis/connection';
import {
  ALARM_STREAM_LENGTH,
  type EntityRates,
  type FleetAlarm,
  type FleetStore,
  type Heartbeat,
  parseHeartbeat,
  parseObject,
  parseRates,
} from './instances';

/** The fleet's alarm stream and heartbeat hash in Redis (keys from `redis/keys.ts`, one Cluster slot). */
export class RedisFleetStore implements FleetStore {
  readonly kind = 'redis';
  private readonly keys: FleetKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    /** The heartbeat hash is deleted this long after the last heartbeat of any instance (a fleet gone for good). */
    private readonly hashTtlMs: number,
  ) {
    this.keys = fleetKeys(prefix);
  }

  async appendAlarm(alarm: FleetAlarm): Promise<void> {
    await this.redis.xadd(
      this.keys.alarms,
      'MAXLEN',
      '~', // trims whole stream nodes (100 entries): up to ~100 more are kept
      ALARM_STREAM_LENGTH,
      '*',
      'instance',
      alarm.instance,
      'record',
      JSON.stringify(alarm.record),
    );
  }

  async recentAlarms(count: number): Promise<FleetAlarm[]> {
    const entries = await this.redis.xrevrange(this.keys.alarms, '+', '-', 'COUNT', count);
    return entries.flatMap(([, fields]) => parseEntry(fields) ?? []);
  }

  async publish(heartbeat: Heartbeat, rates: EntityRates): Promise<void> {
    // One slot (the `{fleet}` tag), so one MULTI on a Cluster too.
    await this.redis
      .multi()
      .hset(this.keys.instances, heartbeat.id, JSON.stringify(heartbeat))
      .hset(this.keys.rates, heartbeat.id, JSON.stringify(rates))
      .pexpire(this.keys.instances, this.hashTtlMs)
      .pexpire(this.keys.rates, this.hashTtlMs)
      .exec();
  }

  async heartbeats(): Promise<Heartbeat[]> {
    const all = await this.redis.hgetall(this.keys.instances);
    return Object.values(all).flatMap((json) => parseHeartbeat(json) ?? []);
  }

  async rates(): Promise<Map<string, EntityRates>> {
    const out = new Map<string, EntityRates>();
    for (const [id, json] of Object.entries(await this.redis.hgetall(this.keys.rates))) {
      const rates = parseRates(json);
      if (rates) out.set(id, rates);
    }
    return out;
  }

  async drop(ids: readonly string[]): Promise<void> {
    if (!ids.length) return;
    await this.redis
      .multi()
      .hdel(this.keys.instances, ...ids)
      .hdel(this.keys.rates, ...ids)
      .exec();
  }
}

/** A stream entry's `instance` and `record` fields, or undefined when it has no readable record. */
function parseEntry(fields: string[]): FleetAlarm | undefined {
  let instance: string | undefined;
  let json: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'instance') instance = fields[i + 1];
    else if (fields[i] === 'record') json = fields[i + 1];
  }
  const record = json === undefined ? undefined : parseObject(json);
  return instance === undefined || record === undefined ? undefined : { instance, record };
}
