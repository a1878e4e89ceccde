/** An entity's business numbers as one object: its template, its periods in its zone, decoding. */
import { PeriodCalendar, type Reset, periodId } from './period';
import { NumberSettingsError, NumberTemplate } from './template';
import { timeZone } from './zone';

/** What an entity stores about its business numbers (`format`, `reset`, `timeZone` at registration; fixed after). */
export interface NumberSettings {
  readonly format: string;
  readonly reset: Reset;
  readonly timeZone: string;
}

/** A number taken apart (`GET /apps/:key/ids/:number`, `idpool decode`). */
export interface DecodedNumber {
  readonly number: string;
  readonly period: string;
  readonly reset: Reset;
  readonly timeZone: string;
  /** ISO 8601, UTC; `end` null for `never`. */
  readonly start: string;
  readonly end: string | null;
  /** In its zone (`2026-11-28`, `2026-11-28T14`), null for `never`. */
  readonly date: string | null;
  readonly seq: string;
}

/** How much of an ISO 8601 time a period's date is, down to the reset's unit. */
const DATE_LENGTH = { never: 0, yearly: 4, monthly: 7, daily: 10, hourly: 13 } as const;

export class NumberScheme {
  readonly calendar: PeriodCalendar;
  /** 1 % of a period's capacity, worked out once: every take's low watermark asks for {@link poolCap}. */
  private readonly onePercent: number;

  private constructor(
    readonly template: NumberTemplate,
    readonly settings: NumberSettings,
  ) {
    this.calendar = new PeriodCalendar(template.reset, timeZone(settings.timeZone));
    this.onePercent = Math.min(Number(template.capacity / 100n), Number.MAX_SAFE_INTEGER);
  }

  /** Checks a registration's `format`, `reset` and `timeZone` (default UTC); throws {@link NumberSettingsError}. */
  static settings(input: { format: string; reset?: string; timeZone?: string }): NumberSettings {
    const { reset } = NumberTemplate.parse(input.format, input.reset);
    try {
      return { format: input.format, reset, timeZone: timeZone(input.timeZone ?? 'UTC').name };
    } catch (err) {
      // timeZone throws only for a zone it does not know.
      throw new NumberSettingsError('timeZone', (err as Error).message.replace(/^timeZone /, ''));
    }
  }

  /** The scheme of stored settings (already checked at registration). */
  static of(settings: NumberSettings): NumberScheme {
    return new NumberScheme(NumberTemplate.parse(settings.format, settings.reset), settings);
  }

  get capacity(): bigint {
    return this.template.capacity;
  }

  /**
   * Most numbers of one period kept ready: 1 % of its capacity, or one largest batch. A discard (a Redis restart,
   * a raise) skips what is ready, so a burst must not set aside a quarter of a `{seq:6}` day.
   */
  poolCap(largestBatch: number): number {
    return Math.max(largestBatch, this.onePercent, 1);
  }

  /** `number` taken apart, or undefined when it is not one of this template's (or names no period of the zone). */
  decode(number: string): DecodedNumber | undefined {
    const parts = this.template.decode(number);
    if (!parts) return undefined;
    const { reset } = this.template;
    // The fields the template does not show are below its reset: periodId cuts them away.
    const period = this.calendar.named(periodId({ year: 1, month: 1, day: 1, hour: 0, ...parts.fields }, reset));
    if (!period) return undefined;
    const { id } = period;
    return {
      number,
      period: id,
      reset,
      timeZone: this.settings.timeZone,
      start: new Date(period.start).toISOString(),
      end: reset === 'never' ? null : new Date(period.end).toISOString(),
      date:
        reset === 'never'
          ? null
          : `${id.slice(0, 4)}-${id.slice(4, 6)}-${id.slice(6, 8)}T${id.slice(8)}`.slice(0, DATE_LENGTH[reset]),
      seq: parts.seq.toString(),
    };
  }
}

/** The most numbers of one period an entity keeps ready ({@link NumberScheme.poolCap}). */
export function numberPoolCap(entity: { readonly maxSizePerTimes: number }, settings: NumberSettings): number {
  return NumberScheme.of(settings).poolCap(entity.maxSizePerTimes);
}
