import { IdpoolError, PoolExhaustedError, UnavailableError, errorMessage } from '../errors';

/** Both segments are used up and the next has not arrived (`nextAsync`/`take`: within `waitMs`); retry later. */
export class SegmentsNotReadyError extends PoolExhaustedError {
  constructor(
    readonly entityKey: string,
    message: string,
  ) {
    super(message, 1);
  }
}

/** The generator was closed; it hands out nothing more. */
export class GeneratorClosedError extends UnavailableError {
  constructor() {
    super('the id generator is closed');
  }
}

/** Number ids asked for, but a segment reaches 2^53: it is dropped (its ids wasted, never repeated). */
export class UnsafeNumberIdError extends IdpoolError {
  constructor(
    readonly entityKey: string,
    readonly lastId: bigint,
  ) {
    super(
      500,
      'unsafe_number_id',
      `entity ${entityKey} has reached id ${lastId}, above Number.MAX_SAFE_INTEGER; create the generator with ids: 'bigint'`,
    );
  }
}

/** A reservation that failed for a reason other than an idpool error (database down, …). */
export class SegmentReservationError extends UnavailableError {
  constructor(
    readonly entityKey: string,
    override readonly cause: unknown,
  ) {
    super(`could not reserve a segment for ${entityKey}: ${errorMessage(cause)}`);
  }
}

/** An option of `createIdGenerator` out of range; `option` names it. Nothing was opened. */
export class InvalidOptionError extends RangeError {
  constructor(
    readonly option: string,
    message: string,
  ) {
    super(message);
    this.name = 'InvalidOptionError';
  }
}

/** `take` was asked for a count outside 1..max. Nothing was handed out. */
export class InvalidCountError extends RangeError {
  constructor(
    readonly count: number,
    max: number,
  ) {
    super(`count must be an integer from 1 to ${max}, got ${count}`);
    this.name = 'InvalidCountError';
  }
}

/** The entity issues ids the library does not (snowflake, trend, …): a 400 should it reach an HTTP answer. */
export class UnsupportedEntityError extends IdpoolError {
  constructor(
    readonly entityKey: string,
    reason: string,
  ) {
    super(400, 'invalid_request', `entity "${entityKey}" ${reason}`);
  }
}
