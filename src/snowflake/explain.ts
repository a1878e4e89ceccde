import { MAX_INT63 } from '../limits';
import type { SnowflakeLayout, SnowflakeParts } from './layout';

/** Decimal string of at most 19 digits: anything else cannot be a 63-bit id. */
const DECIMAL_ID = /^\d{1,19}$/;

/** The text given cannot be an id of this layout; the message says why. */
export class NotAnIdError extends Error {
  override name = 'NotAnIdError';
}

/** What one id is made of, with its timestamp as a date. */
export interface IdExplanation extends Omit<SnowflakeParts, 'timestamp' | 'region'> {
  id: string;
  timestamp: string;
  timestampMs: number;
  /** Present when the layout has region bits (IDPOOL_SNOWFLAKE_REGION_BITS). */
  region?: number;
}

/** The fields of one id of `layout` given in decimal; {@link NotAnIdError} when it cannot be one. */
export function explainId(layout: SnowflakeLayout, nowMs: number, text: string): IdExplanation {
  if (!DECIMAL_ID.test(text))
    throw new NotAnIdError(`id must be a decimal integer (the form ids are issued in), got "${text.slice(0, 40)}"`);
  const id = BigInt(text);
  if (id > MAX_INT63) throw new NotAnIdError('id is above 2^63 - 1; snowflake ids are 63-bit');
  const { timestamp, region, ...fields } = layout.decompose(id);
  const { reservedBits, reservedValue } = layout.settings;
  if (fields.reserved !== reservedValue) {
    throw new NotAnIdError(
      `id ${text} is not from this layout: its ${reservedBits} reserved bits hold ${fields.reserved}, this layout sets ${reservedValue}`,
    );
  }
  const madeAt = layout.unitStartMs(timestamp);
  if (timestamp > layout.timestampAt(nowMs)) {
    throw new NotAnIdError(
      `id ${text} is not from this layout: its timestamp decodes to ${new Date(madeAt).toISOString()}, in the future`,
    );
  }
  return {
    id: text,
    timestamp: new Date(madeAt).toISOString(),
    timestampMs: madeAt,
    ...(layout.settings.regionBits ? { region } : {}),
    ...fields,
  };
}
