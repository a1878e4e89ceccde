/**
 * A business number's zone: an IANA name Node's Intl knows (`Asia/Shanghai`) or a fixed offset (`+08:00`). Both
 * answer the one question the period math asks: an instant's calendar fields.
 */

/** The calendar fields of an instant in a zone (month 1–12, hour 0–23). */
export interface CalendarFields {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
}

export interface TimeZone {
  /** The canonical spelling: the IANA name Intl resolves it to, or `+HH:MM`. */
  readonly name: string;
  fieldsAt(ms: number): CalendarFields;
  /** The wall clock at `ms` here, `2026-11-28 14:20` (alarm messages). */
  wallClock(ms: number): string;
}

const unknownZone = (zone: string, why: string) => new RangeError(`timeZone "${zone}": ${why}`);

const OFFSET = /^([+-])(\d{2}):(\d{2})$/;
/** Real offsets run from −12:00 to +14:00 (Kiribati); a little room each side for historic ones. */
const MAX_OFFSET_MINUTES = 14 * 60;

/** The zone `name` names; throws a RangeError for an unknown one. `Z` and `UTC` are the zero offset. */
export function timeZone(name: string): TimeZone {
  if (name === 'UTC' || name === 'Z' || name === 'Etc/UTC') return fixedOffset(0, 'UTC');
  const offset = OFFSET.exec(name);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3]);
    if (Number(offset[3]) > 59 || minutes > MAX_OFFSET_MINUTES)
      throw unknownZone(name, 'an offset must be from -14:00 to +14:00');
    return fixedOffset(offset[1] === '-' ? -minutes : minutes, name);
  }
  if (name.length > 64 || !/^[A-Za-z][A-Za-z0-9_+/-]*$/.test(name))
    throw unknownZone(name, 'must be an IANA name (Asia/Shanghai) or an offset (+08:00)');
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', { timeZone: name, ...TO_THE_HOUR });
  } catch {
    throw unknownZone(name, 'this runtime does not know it (an IANA name such as Asia/Shanghai, or +08:00)');
  }
  return ianaZone(format);
}

function fixedOffset(minutes: number, name: string): TimeZone {
  const shift = minutes * 60_000;
  return {
    name,
    fieldsAt(ms) {
      const d = new Date(ms + shift);
      return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), hour: d.getUTCHours() };
    },
    // `2026-11-28T14:20:…Z` of the shifted instant is the zone's wall clock.
    wallClock: (ms) => new Date(ms + shift).toISOString().slice(0, 16).replace('T', ' '),
  };
}

/** The calendar fields down to the hour, in a 24-hour day. */
const TO_THE_HOUR = { hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric' } as const;

function ianaZone(format: Intl.DateTimeFormat): TimeZone {
  const name = format.resolvedOptions().timeZone;
  // Minutes only for messages, so the period math's formatter stays at the hour; built when first asked.
  let clock: Intl.DateTimeFormat | undefined;
  return {
    name,
    wallClock(ms) {
      const twoDigits = { month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' } as const;
      clock ??= new Intl.DateTimeFormat('en-US', { timeZone: name, ...TO_THE_HOUR, ...twoDigits });
      const p = partsAt(clock, ms);
      return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
    },
    fieldsAt(ms) {
      const p = partsAt(format, ms);
      return { year: Number(p.year), month: Number(p.month), day: Number(p.day), hour: Number(p.hour) };
    },
  };
}

const partsAt = (format: Intl.DateTimeFormat, ms: number): Partial<Record<Intl.DateTimeFormatPartTypes, string>> =>
  Object.fromEntries(format.formatToParts(ms).map((part) => [part.type, part.value]));
