/**
 * What tests hand the client in place of the network, the clock and the
 * idempotency keys: in this package only (`idpool/client` does not export
 * it), so the public options promise none of them.
 */
import type { IdpoolClientOptions } from './client';
import type { ClientSeams } from './transport';

/** The client's options with its seams, as `new IdpoolClient(...)` takes them. */
export function withClientSeams(options: IdpoolClientOptions & ClientSeams): IdpoolClientOptions {
  return options;
}
