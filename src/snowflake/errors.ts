import { IdpoolError, UnavailableError } from '../errors';

/** Seconds for Retry-After: at least 1, rounded up. */
function retryAfter(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/**
 * The clock moved back into time this sequence has already used with both
 * time-back values (a second rollback), or is behind the last timestamp
 * recorded for the worker id, and the wait until ids are safe again is longer
 * than the configured bound. Nothing was issued.
 */
export class ClockBehindError extends UnavailableError {
  constructor(
    readonly waitMs: number,
    detail: string,
  ) {
    super(`${detail}; ids are safe again in ${Math.ceil(waitMs)} ms, longer than the allowed wait`, retryAfter(waitMs));
  }
}

/** Every sequence number of the current time unit is used and the next unit is further away than the allowed wait. */
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
 * This instance's clock is further from Redis's or the database's than
 * IDPOOL_MAX_CLOCK_SKEW_MS: its snowflake ids could repeat another
 * instance's or break their order, so none is issued until it comes back
 * (and a worker lease is not started: `worker/lease.ts`). `skewMs` > 0: ahead.
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
