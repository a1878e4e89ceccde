// Without Redis: config/ reads its defaults here, and the CLI loads config/.

/**
 * Default lease of a refill lock (IDPOOL_REFILL_LOCK_TTL_MS). It is renewed
 * every quarter of it while a refill runs, so its length bounds how long a
 * dead holder blocks its entity (ids again 0.7–1.0 s after a `kill -9`), not
 * how long a refill may take. Measured (`npm run bench -- refill-lock`,
 * MariaDB, a 2-core machine at load average ~20, four HTTP clients on the
 * same process): a first fill of 1,000 ids holds the lock 79 ms (p50), a
 * refill of 5,000,000 ids 2–9 s. A renewal is late only while the event
 * loop stalls: 0.65–0.93 s at most in a monotonic 5M refill (10,000 ids a
 * call), but up to 1.6 s in a trend one with steps of 1,000,000 (a step is
 * one call). A holder that late loses its lock if another instance wants it
 * meanwhile: both reserve, the fence refuses the older segment, no id twice.
 */
export const REFILL_LOCK_TTL_MS = 1000;
