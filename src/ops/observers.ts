import type { DispatchEvents } from '../pool/dispatcher';
import type { RefillEvents } from '../pool/refill-events';
import type { DatabaseBehindReport } from '../segment/high-water';
import type { Logger } from '../logger';
import { type AlarmInput, type Alarms, logAlarm } from './alarms';
import { type AlarmName, raised } from './alarm-table';
import type { OpsMetrics } from './metrics';
import type { SamplerFeed, SamplerOptions } from './sampler';

type Entities = Pick<SamplerOptions['entities'], 'get'>;

/** The refiller's events as metrics (none: not counted) and alarms; the sweep's pool reads go to `feed`. */
export function opsRefillEvents(
  metrics: OpsMetrics | undefined,
  alarms: Pick<Alarms, 'raise'>,
  entities: Entities,
  stride: SamplerOptions['stride'],
  feed?: Pick<SamplerFeed, 'offer'>,
): RefillEvents {
  return {
    levelsRead: (levels, roundMs, readAt) => feed?.offer(levels, roundMs, readAt),
    refilled(entity, seconds, steps, numbers) {
      metrics?.refills.inc({ entity });
      metrics?.refillDuration.observe(seconds);
      metrics?.segmentsReserved.inc({ entity }, steps);
      metrics?.numbersReserved.inc({ entity }, numbers);
    },
    fenceRefused(entity, start, end) {
      metrics?.fenceRefusals.inc({ entity });
      raise(alarms, 'fence_refused', {
        entityKey: entity,
        message: `segment [${start}, ${end}) of ${entity} refused by the fence (a newer one was pushed); dropped`,
        details: { start: start.toString(), end: end.toString() },
      });
    },
    databaseBehind(report) {
      metrics?.databaseBehind.inc({ entity: report.entityKey });
      alarms.raise(databaseBehindAlarm(report));
    },
    poolDiscarded(entity, fence) {
      // A new entity's pool is "reset" too: nothing ever reserved below the fence, nothing discarded.
      const config = entities.get(entity);
      if (config && fence < stride.of(config).toId(config.startOffset)) return;
      metrics?.poolsDiscarded.inc({ entity });
      raise(alarms, 'pool_discarded', {
        entityKey: entity,
        message: `pool of ${entity} discarded after a Redis server change; refilled from the database`,
        details: { fence: fence.toString() },
      });
    },
    epochChanged(from, to) {
      metrics?.redisEpochChanges.inc();
      raise(alarms, 'redis_epoch_changed', {
        message: 'Redis epoch changed (restart or failover): every pool is discarded and refilled from the database',
        details: { from, to },
      });
    },
    failed: () => metrics?.refillFailures.inc(),
  };
}

/** The refiller's events as log lines alone (tests, tools): each alarm's line, without folding, metrics or webhook. */
export function loggingRefillEvents(log: Logger, entities: Entities, stride: SamplerOptions['stride']): RefillEvents {
  return opsRefillEvents(undefined, { raise: (alarm) => logAlarm(log, alarm) }, entities, stride);
}

function raise(alarms: Pick<Alarms, 'raise'>, name: AlarmName, alarm: Omit<AlarmInput, 'name' | 'severity'>): void {
  alarms.raise(raised(name, alarm));
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
  return raised('database_behind', {
    entityKey,
    message: `the database is behind for ${entityKey}${report.period === undefined ? '' : ` (business numbers of period ${report.period}: offsets are its sequence)`} (restored from a backup, or failed over to a replica that lagged): its offset ${databaseOffset} is ${seen}; carried the offset to ${carriedTo} in one reservation, nothing below it is handed out again`,
    details: {
      ...(report.period === undefined ? {} : { period: report.period }),
      databaseOffset: databaseOffset.toString(),
      record: report.record,
      recordedOffset: recordedOffset.toString(),
      ...(fence === undefined ? {} : { fence: fence.toString() }),
      carriedTo: carriedTo.toString(),
    },
  });
}

/** The dispatcher's events as metrics (none: not counted) and alarms; `onRefused` counts takes short of ids. */
export function opsDispatchEvents(
  metrics: OpsMetrics | undefined,
  alarms: Pick<Alarms, 'raise'>,
  onRefused: (entityKey: string) => void,
): DispatchEvents {
  return {
    rateLimited: (entity) => metrics?.rateLimited.inc({ entity }),
    refused: onRefused,
    exhausted(entity, count) {
      metrics?.exhausted.inc({ entity });
      raise(alarms, 'pool_exhausted', {
        entityKey: entity,
        message: `pool of ${entity} exhausted: a request for ${count} ids found too few after waiting for a refill`,
        details: { count },
      });
    },
    periodExhausted(entity, digits, nextAt) {
      metrics?.exhausted.inc({ entity });
      const next = new Date(nextAt).toISOString();
      raise(alarms, 'period_exhausted', {
        entityKey: entity,
        message: `${entity}: ${digits} digits ran out for this period; takes answer 503 period_exhausted until the next period starts at ${next}`,
        details: { digits, nextAt: next },
      });
    },
  };
}

/** The dispatcher's events as log lines alone (tests, tools): only exhaustion is an alarm. */
export function loggingDispatchEvents(log: Logger): DispatchEvents {
  return opsDispatchEvents(undefined, { raise: (alarm) => logAlarm(log, alarm) }, () => undefined);
}
