import type { FailureKind } from '../failure';
import { classifySqlError } from './errors';

/**
 * Why the database could not be opened, as `redis/start-error.ts` says it: which database (never a password),
 * where its URL came from, and the cause from the driver's code (`db/errors/`); the original stays `cause`.
 */
export class DatabaseStartError extends Error {
  constructor(description: string, urlSource: string, err: unknown) {
    super(`database ${description} (${urlSource}): ${causeOf(err)}`, { cause: err });
    this.name = 'DatabaseStartError';
  }
}

/** What an operator reads for the failures a start-up meets most; the driver's message follows. */
const CAUSES: Partial<Record<FailureKind, string>> = {
  refused: 'connection refused: nothing listens there (is the database server running?)',
  host_not_found: 'host name not found',
  timeout: 'timed out: no answer',
  auth: 'access denied: check the user and password in the URL',
};

function causeOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = CAUSES[classifySqlError(err)?.kind ?? 'other'];
  return cause ? `${cause} (${message})` : message;
}
