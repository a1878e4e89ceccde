import { z } from 'zod';
import { ConfigError } from '../errors';

export type Env = Record<string, string | undefined>;

/** The words of a boolean variable (case-insensitive) and what they read as. */
export const BOOLEAN_WORDS: Readonly<Record<string, boolean>> = Object.fromEntries([
  ...['1', 'true', 'yes', 'on'].map((word) => [word, true] as const),
  ...['0', 'false', 'no', 'off'].map((word) => [word, false] as const),
]);

const INTEGER = z
  .string()
  .regex(/^-?\d+$/)
  .transform(Number);

/** A value as an error may quote it: all before its last `@` masked, so no password is echoed, however malformed. */
export function quoted(raw: string): string {
  const at = raw.lastIndexOf('@');
  if (at === -1) return `"${raw}"`;
  const scheme = /^[a-z][a-z0-9+.-]*:(\/\/)?/i.exec(raw)?.[0] ?? '';
  return `"${scheme}***@${raw.slice(at + 1)}"`;
}

/** Reads one variable at a time through a zod schema: each error is one line naming its variable, echoing no secret. */
export class EnvReader {
  constructor(private readonly env: Env) {}

  /** The raw value, or undefined when unset or empty. */
  raw(name: string): string | undefined {
    return this.env[name] || undefined;
  }

  private parse<T>(name: string, schema: z.ZodType<T>, fallback: T, expected: string): T {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    const result = schema.safeParse(raw.trim());
    if (!result.success) throw new ConfigError(name, `must be ${expected}, got ${quoted(raw)}`);
    return result.data;
  }

  /** An integer from `min` to `max`; without bounds any integer, for values another module bounds (the snowflake layout's). */
  int(name: string, fallback: number, min = -Infinity, max = Infinity): number {
    const range = min === -Infinity ? '' : ` from ${min} to ${max}`;
    return this.parse(name, INTEGER.pipe(z.number().int().min(min).max(max)), fallback, `an integer${range}`);
  }

  bool(name: string, fallback: boolean): boolean {
    return this.word(name, BOOLEAN_WORDS, fallback, 'true or false');
  }

  /** A word of `words` (case-insensitive), read as its value; `expected` lists the documented ones. */
  word<T>(name: string, words: Record<string, T>, fallback: T, expected: string): T {
    const schema = z.string().transform((v, ctx) => {
      const w = v.toLowerCase();
      if (Object.hasOwn(words, w)) return words[w];
      ctx.addIssue({ code: 'custom', message: expected });
      return z.NEVER;
    });
    return this.parse(name, schema, fallback, expected);
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    return this.parse(name, z.enum(values as [T, ...T[]]), fallback, `one of ${values.join(', ')}`);
  }

  /** An ISO date or Unix epoch milliseconds, as epoch ms (its range is the layout's to check). */
  epochMs(name: string, fallback: number): number {
    const schema = z
      .string()
      .transform((v) => (/^\d+$/.test(v) ? Number(v) : Date.parse(v)))
      .pipe(z.number().int());
    return this.parse(name, schema, fallback, 'an ISO date or Unix epoch milliseconds');
  }

  /** An optional bearer token: at least `min` printable characters without spaces (it travels in a header). */
  token(name: string, min = 16): string | undefined {
    const raw = this.raw(name);
    if (raw !== undefined && (raw.length < min || !/^[\x21-\x7e]+$/.test(raw)))
      throw new ConfigError(
        name,
        `must be at least ${min} printable characters without spaces (openssl rand -hex 24 makes one)`,
      );
    return raw;
  }

  /** A URL matching `pattern`; `expected` describes the form. */
  url(name: string, pattern: RegExp, expected: string): string | undefined {
    const raw = this.raw(name);
    if (raw !== undefined && !pattern.test(raw)) throw new ConfigError(name, `must be ${expected}, got ${quoted(raw)}`);
    return raw;
  }
}
