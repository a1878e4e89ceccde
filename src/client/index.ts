/**
 * `idpool/client`: the HTTP client SDK. Depends on nothing but Node's
 * built-in fetch, so services that only take ids need none of the server's
 * dependencies at run time.
 */
export {
  IdpoolClient,
  type IdpoolClientOptions,
  type EntityOptions,
  type EntityMode,
  type IdExplanation,
  type TakeOptions,
} from './client';
export type { BufferOptions } from './trend-buffer';
export {
  LeasedIds,
  NumberLeasedIds,
  BigIntLeasedIds,
  IdpoolLeaseNotReadyError,
  LEASE_DEFAULTS,
  type LeaseOptions,
  type LeaseAnswer,
} from './leased-ids';
export type { ClientClock } from './transport';
export {
  IdpoolClientError,
  IdpoolHttpError,
  IdpoolInvalidRequestError,
  IdpoolUnauthorizedError,
  IdpoolNotFoundError,
  IdpoolConflictError,
  IdpoolRateLimitedError,
  IdpoolTimeoutError,
  IdpoolNetworkError,
  IdpoolUnavailableError,
  type IdpoolErrorCode,
} from './errors';
