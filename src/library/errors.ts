import { IdpoolError, PoolExhaustedError, UnavailableError } from '../errors';

/**
 * Both segments of an entity are used up and the next one has not arrived:
 * from `next()` at once, from `nextAsync()`/`take()` after waiting `waitMs`.
 * Nothing was handed out; retrying later is safe.
 */
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

/**
 * Number ids were asked for but a reserved segment reaches 2^53 or above;
 * the segment is dropped (its ids are wasted, never repeated). Use bigint ids.
 */
export class UnsafeNumberIdError extends IdpoolError {
  constructor(
    readonly entityKey: string,
    readonly lastId: bigint,
  ) {
    super(500, 'unsafe_number_id', `entity ${entityKey} has reached id ${lastId}, above Number.MAX_SAFE_INTEGER; create the generator with ids: 'bigint'`);
  }
}
