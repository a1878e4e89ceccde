/**
 * A business number's template (`INV{yyyy}{MM}{dd}-{seq:6}`): literal text,
 * date tokens and one zero-padded sequence. Every token has a fixed width,
 * so a number is decoded by position alone.
 */
import { type Period, RESETS, type Reset } from './period';
import type { CalendarFields } from './zone';

const DATE_TOKENS = ['yyyy', 'yy', 'MM', 'dd', 'HH'] as const;
type DateToken = (typeof DATE_TOKENS)[number];

type Piece =
  | { readonly kind: 'literal'; readonly text: string }
  | { readonly kind: 'date'; readonly token: DateToken }
  | { readonly kind: 'seq'; readonly width: number };

/** Each date token's field, width and the period unit it shows (`yy` and `yyyy` both the year). */
const TOKENS: Record<DateToken, { unit: Exclude<Reset, 'never'>; width: number; field: keyof CalendarFields }> = {
  yyyy: { unit: 'yearly', width: 4, field: 'year' },
  yy: { unit: 'yearly', width: 2, field: 'year' },
  MM: { unit: 'monthly', width: 2, field: 'month' },
  dd: { unit: 'daily', width: 2, field: 'day' },
  HH: { unit: 'hourly', width: 2, field: 'hour' },
};
const UNIT_RANK: Record<Reset, number> = { never: 0, yearly: 1, monthly: 2, daily: 3, hourly: 4 };
/** The fields a period needs, as many as its unit's rank, each with the tokens that show it (one is enough). */
const NEEDED: readonly (readonly DateToken[])[] = [['yyyy', 'yy'], ['MM'], ['dd'], ['HH']];
/** The longest template: numbers are printed, typed and stored in other systems' columns. */
const MAX_FORMAT_LENGTH = 64;
const MAX_SEQ_WIDTH = 18;

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
  /** The length of every number of this template. */
  readonly length: number;
  readonly seqWidth: number;

  private constructor(
    /** The template as registered. */
    readonly source: string,
    readonly reset: Reset,
    private readonly pieces: readonly Piece[],
  ) {
    const seq = pieces.find((p) => p.kind === 'seq');
    this.seqWidth = seq?.kind === 'seq' ? seq.width : 0;
    this.capacity = 10n ** BigInt(this.seqWidth) - 1n;
    this.length = pieces.reduce((n, p) => n + pieceWidth(p), 0);
  }

  /**
   * Parses and checks `format` with `reset` (default: the finest date token,
   * `never` without one). Throws {@link NumberSettingsError} naming the field.
   */
  static parse(format: string, reset?: string): NumberTemplate {
    const pieces = parsePieces(format);
    const seqs = pieces.filter((p) => p.kind === 'seq').length;
    if (seqs !== 1)
      throw new NumberSettingsError(
        'format',
        seqs === 0 ? 'needs one {seq:N} (the sequence, N digits)' : 'must have exactly one {seq:N}',
      );
    const tokens = new Set(pieces.flatMap((p) => (p.kind === 'date' ? [p.token] : [])));
    const finest = [...tokens].reduce<Reset>(
      (unit, t) => (UNIT_RANK[TOKENS[t].unit] > UNIT_RANK[unit] ? TOKENS[t].unit : unit),
      'never',
    );
    if (reset !== undefined && !(RESETS as readonly string[]).includes(reset))
      throw new NumberSettingsError('reset', `must be one of ${RESETS.join(', ')}`);
    const period = (reset as Reset | undefined) ?? finest;
    if (UNIT_RANK[finest] > UNIT_RANK[period])
      throw new NumberSettingsError(
        'format',
        `date tokens finer than the ${period} period (${[...tokens].filter((t) => UNIT_RANK[TOKENS[t].unit] > UNIT_RANK[period]).join(', ')}): the date would change within one sequence`,
      );
    const needed = NEEDED.slice(0, UNIT_RANK[period]).filter((need) => !need.some((t) => tokens.has(t)));
    if (needed.length > 0)
      throw new NumberSettingsError(
        'format',
        `a ${period} number needs ${needed.map((n) => n.map((t) => `{${t}}`).join(' or ')).join(', ')}: without them numbers of different periods would repeat`,
      );
    return new NumberTemplate(format, period, pieces);
  }

  /** The fixed prefix and suffix around the sequence for one period: formatting many numbers then costs one pad each. */
  formatter(period: Pick<Period, 'date'>): (seq: bigint | number) => string {
    const { head, tail, width } = this.parts(period);
    return (seq) => head + String(seq).padStart(width, '0') + tail;
  }

  /** A period's numbers as `head`, the sequence zero-padded to `width`, `tail`: the date is the same in all of them. */
  parts(period: Pick<Period, 'date'>): { head: string; tail: string; width: number } {
    const text = (p: Piece) =>
      p.kind === 'literal' ? p.text : p.kind === 'date' ? dateText(p.token, period.date) : '';
    const at = this.pieces.findIndex((p) => p.kind === 'seq');
    const [head, tail] = [this.pieces.slice(0, at), this.pieces.slice(at + 1)].map((ps) => ps.map(text).join(''));
    return { head, tail, width: this.seqWidth };
  }

  /**
   * A number of this template taken apart: its date fields (those the
   * template shows) and its sequence; undefined when it is not one.
   */
  decode(number: string): { fields: Partial<CalendarFields>; seq: bigint } | undefined {
    if (number.length !== this.length) return undefined;
    const fields: { year?: number; month?: number; day?: number; hour?: number } = {};
    let seq: bigint | undefined;
    let at = 0;
    for (const p of this.pieces) {
      const text = number.slice(at, at + pieceWidth(p));
      at += pieceWidth(p);
      if (p.kind === 'literal') {
        if (text !== p.text) return undefined;
        continue;
      }
      if (!/^\d+$/.test(text)) return undefined;
      if (p.kind === 'seq') {
        seq = BigInt(text);
        continue;
      }
      const value = Number(text);
      const field = TOKENS[p.token].field;
      // {yy} alone is read as 20yy (docs/numbers.md).
      const full = p.token === 'yy' ? 2000 + value : value;
      if (p.token === 'yy' && fields.year !== undefined) {
        if (fields.year % 100 !== value) return undefined;
        continue;
      }
      if (fields[field] !== undefined && fields[field] !== full) return undefined;
      fields[field] = full;
    }
    if (seq === undefined || seq < 1n) return undefined;
    return { fields, seq };
  }
}

function pieceWidth(p: Piece): number {
  return p.kind === 'literal' ? p.text.length : p.kind === 'seq' ? p.width : TOKENS[p.token].width;
}

function dateText(token: DateToken, date: CalendarFields): string {
  const { field, width } = TOKENS[token];
  return String(token === 'yy' ? date.year % 100 : date[field]).padStart(width, '0');
}

const LITERAL = /^[A-Za-z0-9\-_/.]+$/;

function parsePieces(format: string): Piece[] {
  if (format.length === 0 || format.length > MAX_FORMAT_LENGTH)
    throw new NumberSettingsError('format', `must be 1 to ${MAX_FORMAT_LENGTH} characters`);
  const pieces: Piece[] = [];
  let at = 0;
  while (at < format.length) {
    const open = format.indexOf('{', at);
    const literal = format.slice(at, open === -1 ? undefined : open);
    if (literal) {
      if (!LITERAL.test(literal))
        throw new NumberSettingsError(
          'format',
          `literal text may use only A-Z a-z 0-9 - _ / . (found "${literal.replace(/[A-Za-z0-9\-_/.]/g, '')}")`,
        );
      pieces.push({ kind: 'literal', text: literal });
    }
    if (open === -1) break;
    const close = format.indexOf('}', open);
    if (close === -1) throw new NumberSettingsError('format', `unclosed "{" at ${open}`);
    const token = format.slice(open + 1, close);
    const seq = /^seq:(\d{1,3})$/.exec(token);
    if (seq) {
      const width = Number(seq[1]);
      if (width < 1 || width > MAX_SEQ_WIDTH)
        throw new NumberSettingsError('format', `{seq:N} needs N from 1 to ${MAX_SEQ_WIDTH}, got ${width}`);
      pieces.push({ kind: 'seq', width });
    } else if ((DATE_TOKENS as readonly string[]).includes(token)) {
      pieces.push({ kind: 'date', token: token as DateToken });
    } else {
      throw new NumberSettingsError(
        'format',
        `unknown token {${token}} (known: ${DATE_TOKENS.map((t) => `{${t}}`).join(' ')} {seq:N})`,
      );
    }
    at = close + 1;
  }
  return pieces;
}
