/**
 * What both numbers layers (pool/number-periods.ts on Redis,
 * pool/memory-number-periods.ts in process, the library's too) share: the
 * scheme cache, a period named, the refusals of a spent period.
 */
import { PeriodExhaustedError, PeriodShortError } from '../errors';
import type { Period } from '../numbers/period';
import { NumberScheme, type NumberSettings } from '../numbers/scheme';

/**
 * Five seconds: in process a reservation is one statement on a local or
 * near database, so the lead only takes it off the first take after the
 * boundary; a process that stops within the lead loses that step (a gap in
 * the next period), so it is kept short (Redis's fleet fills a minute ahead:
 * its numbers outlive any one instance).
 */
export const LOCAL_PREFILL_LEAD_MS = 5_000;

/** What a business-number take needs of an entity (an `EntityConfig`; the library builds one from its `application` row). */
export interface NumberEntity {
  readonly key: string;
  readonly mode: 'monotonic' | 'trend' | 'snowflake';
  readonly step: number;
  /** The largest take (`maxSizePerTimes`; the library's takes have none: 0). */
  readonly maxSizePerTimes: number;
  readonly numbers?: NumberSettings;
}

/** The scheme of an entity's settings, built once per settings (they never change once registered). */
export class NumberSchemes {
  private readonly cache = new Map<string, NumberScheme>();
  /** The same settings object again (a take's entity): found without building the key. */
  private readonly bySettings = new WeakMap<NumberSettings, NumberScheme>();

  of(entity: Pick<NumberEntity, 'key' | 'numbers'>): NumberScheme {
    const settings = entity.numbers;
    if (!settings) throw new Error(`entity ${entity.key} has no business-number format`);
    let scheme = this.bySettings.get(settings);
    if (scheme) return scheme;
    const id = `${settings.format}\n${settings.reset}\n${settings.timeZone}`;
    scheme = this.cache.get(id) ?? NumberScheme.of(settings);
    this.cache.set(id, scheme);
    this.bySettings.set(settings, scheme);
    return scheme;
  }
}

/** The period named `periodId` of the entity's calendar, or a 400-worthy complaint. */
export function namedPeriod(
  scheme: NumberScheme,
  entity: Pick<NumberEntity, 'key'>,
  periodId: string,
  now: number,
): Period {
  const period = scheme.calendar.named(periodId);
  if (!period)
    throw new RangeError(
      `"${periodId}" is no ${scheme.template.reset} period of ${entity.key} (${scheme.settings.timeZone}); periods are named like ${scheme.calendar.at(now).id}`,
    );
  return period;
}

/** A period's pool as a take that ran short finds it. */
export interface LivePeriod {
  readonly period: string;
  readonly end: number;
  /** The period's counter is at its capacity: nothing more comes. */
  readonly full: boolean;
  readonly size: number;
}

/**
 * After a take of `count` ran short on the live period `live` at `now`:
 * true when they are ready now; the period's refusal when it is spent
 * (`period_short` with what remains, `period_exhausted` when none); false
 * when a refill is what it needs.
 */
export function readyOrSpent(
  entity: Pick<NumberEntity, 'key'>,
  scheme: NumberScheme,
  live: LivePeriod,
  now: number,
  count: number,
  periodExhausted: (entityKey: string, digits: number, nextAt: number) => void,
): boolean {
  if (live.size >= count) return true;
  if (live.full && live.size > 0) throw new PeriodShortError(entity.key, live.period, count, live.size);
  if (!live.full) return false;
  periodExhausted(entity.key, scheme.template.seqWidth, live.end);
  const seconds = Math.max(1, Math.ceil((live.end - now) / 1000));
  throw new PeriodExhaustedError(
    `${entity.key}: period ${live.period} has handed out all ${scheme.capacity} numbers of ${scheme.template.seqWidth} digits; the next period starts in ${seconds} s`,
    seconds,
  );
}
