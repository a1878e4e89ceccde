/** Exit codes of `idpool`. */
export const EXIT_OK = 0;
/** Runtime or dependency failure: service unreachable, 401/404/409/5xx, database down. */
export const EXIT_FAILURE = 1;
/** Usage or validation error: bad arguments, or a request the service rejected as invalid (400). */
export const EXIT_USAGE = 2;

/** An error the CLI reports as one line on stderr, then exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    readonly exitCode: typeof EXIT_FAILURE | typeof EXIT_USAGE,
    message: string,
    /** The service could not be reached at all (no answer, refused): retrying other requests is pointless. */
    readonly unreachable = false,
    /** The service's error code (`conflict`, `not_found`, …) when it answered with one. */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
