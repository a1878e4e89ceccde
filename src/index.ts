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
