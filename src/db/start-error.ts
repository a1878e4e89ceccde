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

function causeOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  switch (classifySqlError(err)?.kind) {
    case 'refused':
      return `connection refused: nothing listens there (is the database server running?) (${message})`;
    case 'host_not_found':
      return `host name not found (${message})`;
    case 'timeout':
      return `timed out: no answer (${message})`;
    case 'auth':
      return `access denied: check the user and password in the URL (${message})`;
    default:
      return message;
  }
}
