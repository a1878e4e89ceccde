import type { Clock } from '../clock';
import type { ReadinessReport } from './deps';
import { type FailureKind, isRetryable } from '../failure';
import { classifyDependencyError } from './dependency-failure';

/** `/readyz` is open to anyone: a failed dependency shows its kind, never the driver's message (hosts, users, URLs). */
const LABELS: Partial<Record<FailureKind, string>> = {
  timeout: 'timed out',
  refused: 'connection refused',
  host_not_found: 'host not found',
  auth: 'authentication failed',
  lost: 'connection lost',
};

/** What `/readyz` shows for a dependency check that failed with `err`. */
export function failedCheck(err: unknown): string {
  const found = classifyDependencyError(err);
  if (!found) return 'failing';
  return LABELS[found.kind] ?? (isRetryable(found) ? 'busy or read-only' : 'failing');
}

/** What `/readyz` shows for one check: 'ok', a kind of failure ({@link failedCheck}), or idpool's message scrubbed. */
export function publicCheck(value: string): string {
  return value === 'ok' ? value : scrub(value);
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

/** `check` shared by concurrent callers and reused `ttlMs` after it settles: a flood of probes costs one per `ttlMs`. */
export function sharedCheck<T>(check: () => Promise<T>, clock: Pick<Clock, 'monotonic'>, ttlMs: number) {
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

/**
 * `/readyz?shared=degrade` (the Kubernetes probe, docs/kubernetes.md): failed checks of what every instance shares are
 * `degraded` and leave it ready, so a Redis or database blip does not take the whole fleet out of the Service at once
 * (turning 503s with Retry-After into refused connections). Shutting down or a failure of its own still fails it.
 */
export function degradeShared(report: ReadinessReport): ReadinessReport {
  if (report.ready || report.reason !== undefined) return report;
  const failed = Object.keys(report.checks).filter((name) => report.checks[name] !== 'ok');
  const shared = new Set(report.shared ?? []);
  if (!failed.every((name) => shared.has(name))) return report;
  return { ...report, ready: true, degraded: failed };
}
