/** `idpool/client`: the HTTP client SDK, on Node's fetch alone (none of the server's dependencies). */
export * from './client';
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
export * from './errors';
