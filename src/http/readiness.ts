import type { Clock } from '../clock';

/**
 * `/readyz` is open to anyone who can reach the port, so a failed check is
 * reported as a kind of failure, never the driver's message: those name
 * hosts, ports, users and URLs ("connect ECONNREFUSED 10.0.0.5:6379",
 * "Access denied for user 'idpool'@'10.0.0.7'").
 */
const KINDS: [RegExp, string][] = [
  [/timed? ?out|ETIMEDOUT/i, 'timed out'],
  [/ECONNREFUSED|refused/i, 'connection refused'],
  [/ENOTFOUND|EAI_AGAIN|getaddrinfo/i, 'host not found'],
  [/access denied|NOAUTH|WRONGPASS|auth/i, 'authentication failed'],
  [/closed|ECONNRESET|EPIPE|lost|writeable|max retries|offline queue/i, 'connection lost'],
  [/LOADING|READONLY|OOM|CLUSTERDOWN|TRYAGAIN|busy|locked/i, 'busy or read-only'],
];

/** Dependency checks: reported only as one of the kinds above. */
const DEPENDENCIES = new Set(['database', 'redis', 'pool']);

/** What `/readyz` shows for one check: 'ok', a kind of failure, or an idpool message with anything host-like removed. */
export function publicCheck(name: string, value: string): string {
  if (value === 'ok') return value;
  if (DEPENDENCIES.has(name)) return KINDS.find(([pattern]) => pattern.test(value))?.[1] ?? 'failing';
  return scrub(value);
}

/** Removes URLs, user@host, IPv4/IPv6 addresses and host:port pairs from a message. */
export function scrub(message: string): string {
  return message
    .replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[url]')
    .replace(/\S+@\S+/g, '[address]')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b/g, '[address]')
    .replace(/\b[0-9a-f]{0,4}(:[0-9a-f]{0,4}){2,7}\b/gi, '[address]')
    .replace(/\b[a-z0-9-]+(\.[a-z0-9-]+)*:\d{2,5}\b/gi, '[address]');
}

/**
 * `check` shared by concurrent callers and its result reused for `ttlMs`
 * after it settles: `/readyz` is unauthenticated, so a flood of probes costs
 * one SQL query and one Redis round trip per `ttlMs`, not one per probe.
 */
export function sharedCheck<T>(
  check: () => Promise<T>,
  clock: Pick<Clock, 'monotonic'>,
  ttlMs: number,
): () => Promise<T> {
  let last: { at: number; result: Promise<T> } | undefined;
  let running: Promise<T> | undefined;
  return () => {
    if (running) return running;
    if (last && clock.monotonic() - last.at < ttlMs) return last.result;
    const result = check();
    running = result;
    const settled = () => {
      running = undefined;
      last = { at: clock.monotonic(), result };
    };
    result.then(settled, settled);
    return result;
  };
}
