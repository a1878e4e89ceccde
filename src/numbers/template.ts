/** A template (`INV{yyyy}{MM}{dd}-{seq:6}`): literal text, date tokens, one sequence; fixed widths, decoded by position. */
import { type Period, RESETS, type Reset } from './period';
import type { CalendarFields } from './zone';

/** Each date token's field, width and the period unit it shows (`yy` and `yyyy` both the year). */
const TOKENS = {
  yyyy: { field: 'year', width: 4, unit: 'yearly' },
  yy: { field: 'year', width: 2, unit: 'yearly' },
  MM: { field: 'month', width: 2, unit: 'monthly' },
  dd: { field: 'day', width: 2, unit: 'daily' },
  HH: { field: 'hour', width: 2, unit: 'hourly' },
} as const;
type DateToken = keyof typeof TOKENS;
const DATE_TOKENS = Object.keys(TOKENS) as DateToken[];
/** The longest template: numbers are printed, typed and stored in other systems' columns. */
const MAX_FORMAT_LENGTH = 64;
const MAX_SEQ_WIDTH = 18;

/** Literal text, or a date token or the sequence with its width. */
type Piece = string | { readonly token: DateToken | 'seq'; readonly width: number };

/** A broken template or reset: `field` is what the 400 names. */
export class NumberSettingsError extends Error {
  constructor(
    readonly field: 'format' | 'reset' | 'timeZone',
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'NumberSettingsError';
  }
}

/** A parsed, checked template with its reset. */
export class NumberTemplate {
  /** The highest sequence a period holds: 10^width − 1. */
  readonly capacity: bigint;
  readonly seqWidth: number;
  private readonly head: readonly Piece[];
  private readonly tail: readonly Piece[];
  private readonly pattern: RegExp;

  private constructor(
    readonly reset: Reset,
    pieces: readonly Piece[],
    /** The date tokens and the sequence, in template order. */
    private readonly tokens: readonly (DateToken | 'seq')[],
  ) {
    const at = pieces.findIndex((p) => typeof p !== 'string' && p.token === 'seq');
    [this.head, this.tail] = [pieces.slice(0, at), pieces.slice(at + 1)];
    this.seqWidth = (pieces[at] as Exclude<Piece, string>).width;
    this.capacity = 10n ** BigInt(this.seqWidth) - 1n;
    // Literal text is A-Z a-z 0-9 - _ / . (parsePieces): "." is its one regex metacharacter.
    const re = pieces.map((p) => (typeof p === 'string' ? p.replaceAll('.', '\\.') : `(\\d{${p.width}})`));
    this.pattern = new RegExp(`^${re.join('')}$`);
  }

  /** Parses and checks `format` with `reset` (default: the finest date token, or `never`). */
  static parse(format: string, reset?: string): NumberTemplate {
    const pieces = parsePieces(format);
    const all = pieces.flatMap((p) => (typeof p === 'string' ? [] : [p.token]));
    const seqs = all.filter((t) => t === 'seq').length;
    if (seqs !== 1)
      throw new NumberSettingsError(
        'format',
        seqs === 0 ? 'needs one {seq:N} (the sequence, N digits)' : 'must have exactly one {seq:N}',
      );
    const tokens = [...new Set(all)].filter((t): t is DateToken => t !== 'seq');
    const rank = (unit: Reset) => RESETS.indexOf(unit);
    if (reset !== undefined && !(RESETS as readonly string[]).includes(reset))
      throw new NumberSettingsError('reset', `must be one of ${RESETS.join(', ')}`);
    const period = (reset as Reset | undefined) ?? RESETS[Math.max(0, ...tokens.map((t) => rank(TOKENS[t].unit)))];
    const finer = tokens.filter((t) => rank(TOKENS[t].unit) > rank(period));
    if (finer.length > 0)
      throw new NumberSettingsError(
        'format',
        `date tokens finer than the ${period} period (${finer.join(', ')}): the date would change within one sequence`,
      );
    // Each unit down to the period's needs one of the tokens that show it.
    const missing = RESETS.slice(1, rank(period) + 1)
      .map((unit) => DATE_TOKENS.filter((t) => TOKENS[t].unit === unit))
      .filter((shown) => !shown.some((t) => tokens.includes(t)));
    if (missing.length > 0)
      throw new NumberSettingsError(
        'format',
        `a ${period} number needs ${missing.map((n) => n.map((t) => `{${t}}`).join(' or ')).join(', ')}: without them numbers of different periods would repeat`,
      );
    return new NumberTemplate(period, pieces, all);
  }

  /** The fixed prefix and suffix around the sequence for one period: formatting many numbers then costs one pad each. */
  formatter(period: Pick<Period, 'date'>): (seq: bigint | number) => string {
    const { head, tail, width } = this.parts(period);
    return (seq) => head + String(seq).padStart(width, '0') + tail;
  }

  /** A period's numbers as `head`, the sequence zero-padded to `width`, `tail`: the date is the same in all of them. */
  parts({ date }: Pick<Period, 'date'>): { head: string; tail: string; width: number } {
    const text = (p: Piece) => (typeof p === 'string' ? p : dateText(p.token as DateToken, date));
    return { head: this.head.map(text).join(''), tail: this.tail.map(text).join(''), width: this.seqWidth };
  }

  /** A number of this template taken apart: the date fields it shows and its sequence. */
  decode(number: string): { fields: Partial<CalendarFields>; seq: bigint } | undefined {
    const digits = this.pattern.exec(number)?.slice(1);
    if (!digits) return undefined;
    const fields: { -readonly [F in keyof CalendarFields]?: number } = {};
    this.tokens.forEach((token, i) => {
      // {yy} alone is read as 20yy (docs/numbers.md).
      if (token !== 'seq') fields[TOKENS[token].field] ??= Number(digits[i]) + (token === 'yy' ? 2000 : 0);
    });
    const seq = BigInt(digits[this.tokens.indexOf('seq')]);
    // A field shown twice ({yyyy} and {yy}) must read the same: each date token prints its digits again.
    const date = fields as CalendarFields;
    if (seq < 1n || this.tokens.some((t, i) => t !== 'seq' && dateText(t, date) !== digits[i])) return undefined;
    return { fields, seq };
  }
}

function dateText(token: DateToken, date: CalendarFields): string {
  const { field, width } = TOKENS[token];
  return String(token === 'yy' ? date.year % 100 : date[field]).padStart(width, '0');
}

function parsePieces(format: string): Piece[] {
  if (format.length === 0 || format.length > MAX_FORMAT_LENGTH)
    throw new NumberSettingsError('format', `must be 1 to ${MAX_FORMAT_LENGTH} characters`);
  // Literal text runs to the next "{"; a token from there to the next "}".
  return Array.from(format.matchAll(/[^{]+|\{[^}]*\}?/g), ({ 0: text, index }): Piece => {
    if (!text.startsWith('{')) {
      const bad = text.replace(/[A-Za-z0-9\-_/.]/g, '');
      if (bad)
        throw new NumberSettingsError('format', `literal text may use only A-Z a-z 0-9 - _ / . (found "${bad}")`);
      return text;
    }
    if (!text.endsWith('}')) throw new NumberSettingsError('format', `unclosed "{" at ${index}`);
    const token = text.slice(1, -1);
    const seq = /^seq:(\d{1,3})$/.exec(token);
    if (seq) {
      const width = Number(seq[1]);
      if (width < 1 || width > MAX_SEQ_WIDTH)
        throw new NumberSettingsError('format', `{seq:N} needs N from 1 to ${MAX_SEQ_WIDTH}, got ${width}`);
      return { token: 'seq', width };
    }
    const date = DATE_TOKENS.find((t) => t === token);
    if (date) return { token: date, width: TOKENS[date].width };
    throw new NumberSettingsError(
      'format',
      `unknown token {${token}} (known: ${DATE_TOKENS.map((t) => `{${t}}`).join(' ')} {seq:N})`,
    );
  });
}
