/** String forms of ids: base62 (0-9 A-Z a-z, in ASCII order), base36, hex; the HTTP API's is decimal. */
export type IdEncoding = 'decimal' | 'base62' | 'base36' | 'hex';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
// Each encoding's radix (base62's digits are BASE62) and the strings that can be one of its ids.
const ENCODINGS: Record<IdEncoding, { radix: number; pattern: RegExp }> = {
  decimal: { radix: 10, pattern: /^(0|[1-9]\d{0,19})$/ },
  base62: { radix: 62, pattern: /^[0-9A-Za-z]{1,11}$/ },
  base36: { radix: 36, pattern: /^[0-9a-z]{1,13}$/i },
  hex: { radix: 16, pattern: /^[0-9a-f]{1,16}$/i },
};
const UINT64_MAX = (1n << 64n) - 1n;

// JavaScript callers may pass anything: the name is checked at run time.
function encodingOf(name: string): (typeof ENCODINGS)[IdEncoding] {
  const spec = (ENCODINGS as Partial<Record<string, (typeof ENCODINGS)[IdEncoding]>>)[name];
  if (!spec?.pattern) throw new RangeError(`unknown encoding "${name}"; use decimal, base62, base36 or hex`);
  return spec;
}

/** `id` (a non-negative integer below 2^64) as a string in `encoding`. */
export function encodeId(id: bigint | number, encoding: IdEncoding = 'decimal'): string {
  let v = BigInt(id);
  if (v < 0n || v > UINT64_MAX) throw new RangeError(`id must be from 0 to 2^64 - 1, got ${v}`);
  const { radix } = encodingOf(encoding);
  // BigInt's toString stops at base 36.
  if (radix !== 62) return v.toString(radix);
  if (v === 0n) return '0';
  let out = '';
  while (v > 0n) {
    out = BASE62[Number(v % 62n)] + out;
    v /= 62n;
  }
  return out;
}

/** Parses a string made by {@link encodeId}; throws RangeError for anything else. */
export function decodeId(text: string, encoding: IdEncoding = 'decimal'): bigint {
  const { radix, pattern } = encodingOf(encoding);
  const input: unknown = text;
  if (typeof input !== 'string' || !pattern.test(input))
    throw new RangeError(`"${String(input)}" is not a ${encoding} id`);
  let v = 0n;
  for (const c of text) v = v * BigInt(radix) + BigInt(radix === 62 ? BASE62.indexOf(c) : parseInt(c, radix));
  if (v > UINT64_MAX) throw new RangeError(`"${text}" is above 2^64 - 1`);
  return v;
}
