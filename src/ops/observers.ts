import type { EntityConfig } from '../entities/entity';
import type { Alarms } from './alarms';
import type { OpsMetrics } from './metrics';
import type { SamplerOptions } from './sampler';

/** What the refiller reports (the shape of `RefillEvents` in src/pool/refiller.ts). */
export interface RefillObserver {
  refilled(entityKey: string, seconds: number, steps: number, numbers: number): void;
  fenceRefused(entityKey: string, start: bigint, end: bigint): void;
  poolDiscarded(entityKey: string, fence: bigint): void;
  serverChanged(from: string, to: string): void;
}

/** What the dispatcher reports (the shape of `DispatchEvents` in src/pool/dispatcher.ts). */
export interface DispatchObserver {
  served(entityKey: string, count: number): void;
  rateLimited(entityKey: string): void;
  exhausted(entityKey: string, count: number): void;
}

/** Any issuer of ids: the dispatcher's take, or the snowflake generator's. */
export interface Issuer {
  take(entityKey: string, count: number): string[] | Promise<string[]>;
}

/** Turns the refiller's events into metrics and alarms. */
export function refillObserver(
  metrics: OpsMetrics,
  alarms: Alarms,
  apps: { get(key: string): EntityConfig | undefined },
  cluster: SamplerOptions['cluster'],
): RefillObserver {
  return {
    refilled(entity, seconds, steps, numbers) {
      metrics.refills.inc({ entity });
      metrics.refillDuration.observe(seconds);
      metrics.segmentsReserved.inc({ entity }, steps);
      metrics.numbersReserved.inc({ entity }, numbers);
    },
    fenceRefused(entity, start, end) {
      metrics.fenceRefusals.inc({ entity });
      alarms.raise({
        name: 'fence_refused',
        severity: 'warning',
        entityKey: entity,
        message: `segment [${start}, ${end}) of ${entity} refused by the fence (a newer one was pushed); dropped`,
        details: { start: start.toString(), end: end.toString() },
      });
    },
    poolDiscarded(entity, fence) {
      // The refiller also "resets" a pool no server has claimed yet (a new
      // entity): with nothing ever reserved below the fence there was
      // nothing to discard.
      const app = apps.get(entity);
      if (app && fence < cluster.toId(app.startOffset)) return;
      metrics.poolsDiscarded.inc({ entity });
      alarms.raise({
        name: 'pool_discarded',
        severity: 'warning',
        entityKey: entity,
        message: `pool of ${entity} discarded after a Redis server change; refilled from the database`,
        details: { fence: fence.toString() },
      });
    },
    serverChanged(from, to) {
      metrics.redisServerChanges.inc();
      alarms.raise({
        name: 'redis_server_changed',
        severity: 'critical',
        message: 'Redis server changed (restart or failover): every pool is discarded and refilled from the database',
        details: { from, to },
      });
    },
  };
}

/** Turns the dispatcher's events into metrics and alarms; `onServed` counts what was handed out. */
export function dispatchObserver(metrics: OpsMetrics, alarms: Alarms, onServed: (entityKey: string, count: number) => void): DispatchObserver {
  return {
    served(entity, count) {
      metrics.idsServed.inc({ entity }, count);
      onServed(entity, count);
    },
    rateLimited: (entity) => metrics.rateLimited.inc({ entity }),
    exhausted(entity, count) {
      metrics.exhausted.inc({ entity });
      alarms.raise({
        name: 'pool_exhausted',
        severity: 'critical',
        entityKey: entity,
        message: `pool of ${entity} exhausted: a request for ${count} ids found too few after waiting for a refill`,
        details: { count },
      });
    },
  };
}

/** `issuer`, reporting every id it hands out to `events.served`: snowflake ids never pass the dispatcher, which reports its own. */
export function countingServed<T extends Issuer>(issuer: T, events: Pick<DispatchObserver, 'served'>): T {
  const counted = Object.create(issuer) as T;
  counted.take = (entityKey: string, count: number) => {
    const ids = issuer.take(entityKey, count);
    if (Array.isArray(ids)) {
      events.served(entityKey, ids.length);
      return ids;
    }
    return ids.then((taken) => {
      events.served(entityKey, taken.length);
      return taken;
    });
  };
  return counted;
}
