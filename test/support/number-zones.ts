/** Fixed-offset zones that bring a business-number period boundary near (issue 35's proofs). */

/** The offset `±HH:MM` whose midnight falls at `atMs` (a whole minute). */
export function zoneWithMidnightAt(atMs: number): string {
  let minutes = ((-Math.round(atMs / 60_000) % 1440) + 1440) % 1440;
  if (minutes > 14 * 60) minutes -= 1440;
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The calendar date `yyyyMMdd` of `ms` in the offset zone. */
export function dateIn(zone: string, ms: number): string {
  const sign = zone.startsWith('-') ? -1 : 1;
  const offset = sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000;
  return new Date(ms + offset).toISOString().slice(0, 10).replaceAll('-', '');
}

/** A fixed offset that puts the zone's clock near noon now, so no period boundary falls inside a test; with today's date there. */
export function noonZone(): { timeZone: string; date: string } {
  const hours = 12 - new Date().getUTCHours();
  const timeZone = `${hours < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:00`;
  return { timeZone, date: new Date(Date.now() + hours * 3600_000).toISOString().slice(0, 10) };
}
