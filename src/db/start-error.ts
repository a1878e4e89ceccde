import type { FailureKind } from '../failure';
import { classifySqlError } from './errors';

/**
 * Why the database could not be opened, said as Redis's start-up errors are
 * (`redis/start-error.ts`): which database (its address, never a password),
 * where its URL came from, and the cause an operator acts on. A driver says
 * only `connect ECONNREFUSED 127.0.0.1:3307`, which names neither the
 * variable to fix nor what it means. The cause is read from the driver's
 * code (`db/errors/`), never its text; the original stays as `cause`, so
 * failure classification still sees it.
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
