/**
 * Now's period of a business-number entity, read by its kind: a pooled one
 * from the numbers layer (`NumberAdmin`: `pool/period-pools.ts`, with
 * Redis or without), a gapless series from its
 * ledger's counter (every sequence up to it issued, voided or entered lost)
 * by the database's clock, which decides a gapless period. The ops sampler
 * (dashboard rows, period gauges and alarms) and the admin list
 * (`idpool apps list`) read through it, so a gapless series shows what its
 * ledger issued rather than the empty pool it never fills.
 */
import type { EntityConfig } from '../entities/entity';
import { NumberScheme } from '../numbers/scheme';
import type { NumberUsage } from '../pool/period-pools';
import type { NumberUsageSource } from './sampler';

/** What is read of a gapless series' ledger (`gapless/ledger.ts`): the database's clock and a period's counter. */
export interface GaplessCounters {
  now(): Promise<number>;
  counter(entityKey: string, period: string): Promise<bigint>;
}

/** `pooled` for a business-number entity with a pool, the ledger's counter for a gapless series. */
export function numberUsageByKind(pooled: NumberUsageSource, ledger: GaplessCounters): NumberUsageSource {
  return { usage: (entity) => (entity.gapless ? gaplessUsage(ledger, entity) : pooled.usage(entity)) };
}

async function gaplessUsage(ledger: GaplessCounters, entity: EntityConfig): Promise<NumberUsage> {
  if (!entity.numbers) throw new TypeError(`entity "${entity.key}" is gapless without a format`);
  const scheme = NumberScheme.of(entity.numbers);
  const now = await ledger.now();
  const period = scheme.calendar.at(now);
  return {
    now,
    period,
    used: await ledger.counter(entity.key, period.id),
    // Issued at the take, in the take's transaction: nothing waits ready.
    ready: 0,
    capacity: scheme.capacity,
    digits: scheme.template.seqWidth,
    timeZone: scheme.settings.timeZone,
  };
}
