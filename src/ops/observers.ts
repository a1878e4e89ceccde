import type { EntityConfig } from '../entities/entity';
import type { DispatchEvents } from '../pool/dispatcher';
import type { RefillEvents } from '../pool/refiller';
import type { DatabaseBehindReport } from '../segment/high-water';
import type { AlarmInput, Alarms } from './alarms';
import type { OpsMetrics } from './metrics';
import type { SamplerOptions } from './sampler';

/** Any issuer of ids: the dispatcher's take, or the snowflake generator's. */
export interface Issuer {
  take(entity: { readonly key: string }, count: number): string[] | Promise<string[]>;
}

/** Turns the refiller's events into metrics and alarms. */
export function opsRefillEvents(
  metrics: OpsMetrics,
  alarms: Alarms,
  entities: { get(key: string): EntityConfig | undefined },
  stride: SamplerOptions['stride'],
): RefillEvents {
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
    databaseBehind(report) {
      metrics.databaseBehind.inc({ entity: report.entityKey });
      alarms.raise(databaseBehindAlarm(report));
    },
    poolDiscarded(entity, fence) {
      // The refiller also "resets" a pool no epoch has claimed yet (a new
      // entity): with nothing ever reserved below the fence there was
      // nothing to discard.
      const config = entities.get(entity);
      if (config && fence < stride.of(config).toId(config.startOffset)) return;
      metrics.poolsDiscarded.inc({ entity });
      alarms.raise({
        name: 'pool_discarded',
        severity: 'warning',
        entityKey: entity,
        message: `pool of ${entity} discarded after a Redis server change; refilled from the database`,
        details: { fence: fence.toString() },
      });
    },
    epochChanged(from, to) {
      metrics.redisEpochChanges.inc();
      alarms.raise({
        name: 'redis_server_changed',
        severity: 'critical',
        message: 'Redis server changed (restart or failover): every pool is discarded and refilled from the database',
        details: { from, to },
      });
    },
    failed: () => metrics.refillFailures.inc(),
  };
}

/** The `database_behind` alarm: what the database said, what the record said, and what was done about it. */
function databaseBehindAlarm(report: DatabaseBehindReport): AlarmInput {
  const { entityKey, databaseOffset, recordedOffset, carriedTo, fence } = report;
  const seen =
    report.record === 'fence'
      ? `below the Redis fence (id ${fence}, offset ${recordedOffset})`
      : report.record === 'high-water file'
        ? `below the high-water file (offset ${recordedOffset})`
        : `below this process's last reservation (offset ${recordedOffset})`;
  return {
    name: 'database_behind',
    severity: 'critical',
    entityKey,
    message: `the database is behind for ${entityKey} (restored from a backup, or failed over to a replica that lagged): its offset ${databaseOffset} is ${seen}; carried the offset to ${carriedTo} in one reservation, nothing below it is handed out again`,
    details: {
      databaseOffset: databaseOffset.toString(),
      record: report.record,
      recordedOffset: recordedOffset.toString(),
      ...(fence === undefined ? {} : { fence: fence.toString() }),
      carriedTo: carriedTo.toString(),
    },
  };
}

/** Turns the dispatcher's events into metrics and alarms; `onServed` counts what was handed out, `onRefused` the takes refused for too few ids. */
export function opsDispatchEvents(
  metrics: OpsMetrics,
  alarms: Alarms,
  onServed: (entityKey: string, count: number) => void,
  onRefused: (entityKey: string) => void,
): DispatchEvents {
  return {
    served(entity, count) {
      metrics.idsServed.inc({ entity }, count);
      onServed(entity, count);
    },
    rateLimited: (entity) => metrics.rateLimited.inc({ entity }),
    refused: onRefused,
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
export function countingServed<T extends Issuer>(issuer: T, events: Pick<DispatchEvents, 'served'>): T {
  const counted = Object.create(issuer) as T;
  counted.take = (entity: Parameters<T['take']>[0], count: number) => {
    const ids = issuer.take(entity, count);
    if (Array.isArray(ids)) {
      events.served(entity.key, ids.length);
      return ids;
    }
    return ids.then((taken) => {
      events.served(entity.key, taken.length);
      return taken;
    });
  };
  return counted;
}
