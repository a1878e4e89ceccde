/**
 * Short string forms of ids: base62 (0-9 A-Z a-z, in ASCII order), base36
 * (0-9 a-z) and hex. Decimal strings remain the wire format of the HTTP API.
 */
export type IdEncoding = 'decimal' | 'base62' | 'base36' | 'hex';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const PATTERNS: Record<IdEncoding, RegExp> = {
  decimal: /^(0|[1-9]\d{0,19})$/,
  base62: /^[0-9A-Za-z]{1,11}$/,
  base36: /^[0-9a-z]{1,13}$/i,
  hex: /^[0-9a-f]{1,16}$/i,
};
const UINT64_MAX = (1n << 64n) - 1n;

/** `id` (a non-negative integer below 2^64) as a string in `encoding`. */
export function encodeId(id: bigint | number, encoding: IdEncoding = 'decimal'): string {
  let v = BigInt(id);
  if (v < 0n || v > UINT64_MAX) throw new RangeError(`id must be from 0 to 2^64 - 1, got ${v}`);
  switch (encoding) {
    case 'decimal':
      return v.toString();
    case 'base36':
      return v.toString(36);
    case 'hex':
      return v.toString(16);
    case 'base62': {
      if (v === 0n) return '0';
      let out = '';
      while (v > 0n) {
        out = BASE62[Number(v % 62n)] + out;
        v /= 62n;
      }
      return out;
    }
    default:
      throw new RangeError(`unknown encoding "${encoding as string}"; use decimal, base62, base36 or hex`);
  }
}

/** Parses a string made by {@link encodeId}; throws RangeError for anything else. */
export function decodeId(text: string, encoding: IdEncoding = 'decimal'): bigint {
  // JavaScript callers may pass anything: both arguments are checked at run time.
  const pattern = (PATTERNS as Partial<Record<string, RegExp>>)[encoding];
  if (!pattern) throw new RangeError(`unknown encoding "${encoding}"; use decimal, base62, base36 or hex`);
  const input: unknown = text;
  if (typeof input !== 'string' || !pattern.test(input))
    throw new RangeError(`"${String(input)}" is not a ${encoding} id`);
  let v: bigint;
  switch (encoding) {
    case 'decimal':
      v = BigInt(text);
      break;
    case 'hex':
      v = BigInt(`0x${text}`);
      break;
    case 'base36':
      v = 0n;
      for (const c of text.toLowerCase()) v = v * 36n + BigInt(parseInt(c, 36));
      break;
    case 'base62':
      v = 0n;
      for (const c of text) v = v * 62n + BigInt(BASE62.indexOf(c));
      break;
  }
  if (v > UINT64_MAX) throw new RangeError(`"${text}" is above 2^64 - 1`);
  return v;
}
