// Without HTTP code: config/ maps the environment onto these.

/** What one slow or idle client may hold of the HTTP server. */
export interface HttpServerSettings {
  /** A request's headers must have arrived within this long of its start. */
  headersTimeoutMs: number;
  /** A whole request (headers and body) must have arrived within this long. */
  requestTimeoutMs: number;
  /** Connections beyond this many are closed as they arrive. */
  maxConnections: number;
}

/** Defaults of {@link HttpServerSettings}. */
export const DEFAULT_HTTP_SERVER: Readonly<HttpServerSettings> = {
  // Requests are a few hundred bytes of headers and at most 16 KB of body,
  // sent at once by any real client: 10 s and 30 s leave a slow network
  // ample room while a trickling client holds a socket seconds, not minutes.
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // Far above what pooled clients and load balancers open to one instance
  // (tens each), well below a container's file descriptor limit.
  maxConnections: 2_000,
};

/**
 * Least length of the admin and ops tokens: a random token of 32 characters
 * (`openssl rand -hex 16` and up) is beyond guessing at the 3 tries a second
 * the failed-authentication limit allows.
 */
export const SERVICE_TOKEN_MIN_LENGTH = 32;

/** Largest request body, in bytes: registrations and counts are far smaller. */
export const BODY_LIMIT_BYTES = 16 * 1024;

/**
 * Other services' protocols this instance also speaks (IDPOOL_COMPAT), off
 * by default: `leaf` mounts Leaf's two credential-free routes (for entities
 * opted in with `compat: ['leaf']`), `tinyid` Tinyid's four token routes.
 */
export const COMPAT_ROUTES = ['leaf', 'tinyid'] as const;
export type CompatRoute = (typeof COMPAT_ROUTES)[number];

/** Tinyid's `batch.size.max`: a larger `batchSize` is cut to it, not refused. */
export const TINYID_BATCH_MAX = 100_000;
