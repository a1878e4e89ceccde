import type { z } from 'zod';
import { InvalidRequestError } from '../errors';

/** Validates a JSON body against a schema; the first problem becomes one clear 400 message. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body))
    throw new InvalidRequestError('request body must be a JSON object (Content-Type: application/json)');
  // A schema's own message wins over `inOurWords` (zod's order), which only words what it left to zod.
  const result = schema.safeParse(body, { error: inOurWords, reportInput: true });
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') throw new InvalidRequestError(`unknown field "${issue.keys[0]}"`);
  throw new InvalidRequestError(field ? `${field}: ${issue.message}` : issue.message);
}

/** `work`'s result; an error of `kind` it throws is the caller's mistake: a 400 with its message, after `prefix`. */
export async function as400<T>(
  kind: abstract new (...args: never[]) => Error,
  work: () => T | Promise<T>,
  prefix = '',
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof kind) throw new InvalidRequestError(`${prefix}${err.message}`);
    throw err;
  }
}

/**
 * zod's wording of a problem (`Invalid option: expected one of "monotonic"|"trend"`) said as idpool's other messages
 * are: what is allowed, then what was given (parseBody puts the field first). Undefined leaves zod's for rarer ones.
 */
function inOurWords(issue: z.core.$ZodRawIssue): string | undefined {
  // The value given, as JSON (a JSON body's value always has one), cut at 40 characters.
  const given = issue.input === undefined ? 'nothing' : JSON.stringify(issue.input);
  const got = `; got ${given.length > 40 ? `${given.slice(0, 40)}…` : given}`;
  switch (issue.code) {
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}${got}`;
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return `must be ${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}${got}`;
    case 'too_small':
    case 'too_big': {
      const [bound, word, strict] =
        issue.code === 'too_small' ? [issue.minimum, 'at least', 'above'] : [issue.maximum, 'at most', 'below'];
      const unit = issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : '';
      return `must be ${issue.inclusive === false ? strict : word} ${String(bound)}${unit}${got}`;
    }
    default:
      return undefined;
  }
}
