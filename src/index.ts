/**
 * idpool's public surface. Anything not exported here is internal.
 */
export { loadConfig, ConfigError, type Config } from './config/config';
export { createService, type Service, type ServiceOptions } from './service';
export { type Clock, systemClock } from './clock';
export {
  IdpoolError,
  InvalidRequestError,
  UnauthorizedError,
  NotFoundError,
  ConflictError,
  PayloadTooLargeError,
  RateLimitedError,
  PoolExhaustedError,
  UnavailableError,
} from './errors';
export { entityKeys, type EntityKeys } from './pool/keys';
export { Snowflake, type SnowflakeOptions, type SnowflakeLeaseOptions } from './snowflake/snowflake';
export { SnowflakeLayout, type SnowflakeParts, type SnowflakeSettings, type TimeUnit, TIMESTAMP_BITS, UNIT_MS } from './snowflake/layout';
export { encodeId, decodeId, type IdEncoding } from './snowflake/encoding';
export { ClockBehindError, SequenceExhaustedError, LayoutExhaustedError, NoWorkerLeaseError } from './snowflake/errors';
export { type WorkerGrant, type WorkerSource, fixedWorker } from './snowflake/worker-source';
export { ClockSkewError } from './worker/lease';
export {
  createIdGenerator,
  type IdGenerator,
  type IdGeneratorOptions,
  SegmentsNotReadyError,
  SegmentReservationError,
  GeneratorClosedError,
  UnsafeNumberIdError,
} from './library';
