/** The client's test seams: not exported by `idpool/client`, so the public options promise none of them. */
import type { IdpoolClientOptions } from './client';
import type { ClientSeams } from './transport';

/** The client's options with its seams, as `new IdpoolClient(...)` takes them. */
export function withClientSeams(options: IdpoolClientOptions & ClientSeams): IdpoolClientOptions {
  return options;
}
