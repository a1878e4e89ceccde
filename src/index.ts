/** idpool's public surface. Anything not exported here is internal. */
import { Snowflake as SnowflakeGenerator } from './snowflake/snowflake';
import { snowflakeFromEnv } from './config/snowflake-env';
import { snowflakeWithLease } from './worker/snowflake-lease';

/**
 * The snowflake generator, with `withLease(options)` (its worker id leased from the database) and `fromEnv(env)`
 * (`IDPOOL_*` variables): attached here because `worker/` and `config/` depend on `snowflake/`, not the reverse.
 */
export const Snowflake = Object.assign(SnowflakeGenerator, {
  withLease: snowflakeWithLease,
  fromEnv: snowflakeFromEnv,
});
export type Snowflake = SnowflakeGenerator;
export type { SnowflakeOptions } from './snowflake/snowflake';
export type { SnowflakeLeaseOptions } from './worker/snowflake-lease';
export { loadConfig, ConfigError, type Config } from './config/config';
export { createService, type Service, type ServiceOptions } from './service';
export { type Clock, systemClock } from './clock';
export {
  IdpoolError,
  InvalidRequestError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  ConflictError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  RateLimitedError,
  PoolExhaustedError,
  UnavailableError,
} from './errors';
export { entityKeys, type EntityKeys } from './redis/keys';
export {
  SnowflakeLayout,
  type SnowflakeParts,
  type SnowflakeSettings,
  type TimeUnit,
  TIMESTAMP_BITS,
  UNIT_MS,
} from './snowflake/layout';
export { encodeId, decodeId, type IdEncoding } from './snowflake/encoding';
export {
  ClockBehindError,
  ClockSkewError,
  SequenceExhaustedError,
  LayoutExhaustedError,
  NoWorkerLeaseError,
} from './snowflake/errors';
export { type WorkerGrant, type WorkerSource, fixedWorker } from './snowflake/worker-source';
export {
  createIdGenerator,
  type IdGenerator,
  type IdGeneratorOptions,
  type TakeOptions,
  SegmentsNotReadyError,
  SegmentReservationError,
  GeneratorClosedError,
  UnsafeNumberIdError,
  InvalidOptionError,
  InvalidCountError,
  UnsupportedEntityError,
  StrideMismatchError,
  type DatabaseBehindReport,
} from './library';
