// Numbers and dates as the dashboard and alarm messages show them.

/** Two decimals; non-finite numbers as they are. */
export function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 100) / 100 : n;
}

/** JSON has no Infinity: "never" is null. */
export function finite(n: number | undefined): number | null {
  return n === undefined || !Number.isFinite(n) ? null : round(n);
}

/** JavaScript dates end at ±8.64e15 ms (year 275760): a later moment is reported as never (null). */
const LAST_DATE_MS = 8.64e15;

/** The ISO date of a Unix ms moment, or null ("never") past the last date JavaScript can show. */
export function isoDate(ms: number | undefined): string | null {
  return ms !== undefined && Number.isFinite(ms) && Math.abs(ms) <= LAST_DATE_MS ? new Date(ms).toISOString() : null;
}

/** A duration as a person reads it: seconds, minutes, hours or days. */
export function describeSeconds(s: number): string {
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} days`;
}
