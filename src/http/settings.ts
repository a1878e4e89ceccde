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
  // A few hundred bytes of headers and at most 16 KB of body, sent at once by any real client: 10 s and 30 s leave a
  // slow network ample room while a trickling client holds a socket seconds, not minutes.
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // Far above what pooled clients and load balancers open to one instance (tens each), below a container's fd limit.
  maxConnections: 2_000,
};

/** Least length of the admin and ops tokens: 32 random characters (`openssl rand -hex 16`) are beyond guessing at 3/s. */
export const SERVICE_TOKEN_MIN_LENGTH = 32;

/** Largest request body, in bytes: registrations and counts are far smaller. */
export const BODY_LIMIT_BYTES = 16 * 1024;

/** Other protocols spoken (IDPOOL_COMPAT, none by default): Leaf's two credential-free routes, Tinyid's four. */
export const COMPAT_ROUTES = ['leaf', 'tinyid'] as const;
export type CompatRoute = (typeof COMPAT_ROUTES)[number];

/** Tinyid's `batch.size.max`: a larger `batchSize` is cut to it, not refused. */
export const TINYID_BATCH_MAX = 100_000;
