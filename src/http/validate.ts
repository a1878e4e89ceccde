import type { z } from 'zod';
import { InvalidRequestError } from '../errors';

/** Validates a JSON body against a schema; the first problem becomes one clear 400 message. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidRequestError('request body must be a JSON object (Content-Type: application/json)');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') throw new InvalidRequestError(`unknown field "${issue.keys[0]}"`);
  throw new InvalidRequestError(field ? `${field}: ${issue.message}` : issue.message);
}
