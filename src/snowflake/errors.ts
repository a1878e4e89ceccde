import { IdpoolError, UnavailableError } from '../errors';

/** Seconds for Retry-After: at least 1, rounded up. */
function retryAfter(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/** A second rollback into used time, or a clock behind the worker's floor, for longer than the allowed wait. */
export class ClockBehindError extends UnavailableError {
  constructor(
    readonly waitMs: number,
    detail: string,
  ) {
    super(`${detail}; ids are safe again in ${Math.ceil(waitMs)} ms, longer than the allowed wait`, retryAfter(waitMs));
  }
}

/** The time unit's sequence is spent and the next unit is further away than the allowed wait. */
export class SequenceExhaustedError extends UnavailableError {
  constructor(
    readonly waitMs: number,
    entityKey: string,
  ) {
    super(
      `snowflake sequence${entityKey ? ` of "${entityKey}"` : ''} is exhausted for this time unit; the next unit starts in ${Math.ceil(waitMs)} ms`,
      retryAfter(waitMs),
    );
  }
}

/** The timestamp field has no room left: the layout has run out of time. */
export class LayoutExhaustedError extends UnavailableError {
  constructor(endMs: number) {
    super(
      `the snowflake layout ran out of timestamps on ${new Date(endMs).toISOString()}; configure more timestamp bits or a later epoch`,
      3600,
    );
  }
}

/** No valid worker lease: none acquired yet, every worker id taken, or the lease lapsed. */
export class NoWorkerLeaseError extends UnavailableError {
  constructor(detail: string, retryAfterSeconds = 1) {
    super(`no snowflake worker lease: ${detail}`, retryAfterSeconds);
  }
}

/**
 * This clock is past IDPOOL_MAX_CLOCK_SKEW_MS from Redis's or the database's, so its ids could repeat
 * or misorder other instances' (`skewMs` > 0: ahead).
 */
export class ClockSkewError extends IdpoolError {
  constructor(
    readonly skewMs: number,
    maxMs: number,
    retryAfterSeconds: number,
    against = "Redis's or the database's",
  ) {
    super(
      503,
      'clock_skew',
      `this instance's clock is ${Math.round(Math.abs(skewMs))} ms ${skewMs > 0 ? 'ahead of' : 'behind'} ${against}, more than IDPOOL_MAX_CLOCK_SKEW_MS=${maxMs}: no snowflake ids until it is back within it (time synchronisation, NTP)`,
      retryAfterSeconds,
    );
  }
}
