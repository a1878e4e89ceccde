// Now's period of a business-number entity by its kind: a pooled one from the numbers layer, a gapless series
// from its ledger's counter by the database's clock, so the sampler and `idpool apps list` show what it issued
// rather than the pool it never fills.
import type { EntityConfig } from '../entities/entity';
import { NumberScheme } from '../numbers/scheme';
import type { NumberUsage } from '../pool/period-pools';
import type { NumberUsageSource } from './sampler';
import type { SqlLedger } from '../gapless/ledger';

/** What is read of a gapless series' ledger: the database's clock and a period's counter. */
type GaplessCounters = Pick<SqlLedger, 'now' | 'counter'>;

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
