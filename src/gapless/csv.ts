/**
 * The ledger as CSV for an auditor (RFC 4180: comma-separated, CRLF, a
 * field with a comma, quote or line break quoted). A caller's reference or
 * a void reason starting with `=`, `+`, `-` or `@` gets a leading `'`, so a
 * spreadsheet shows it as text rather than running it as a formula.
 */
import type { LedgerEntry } from './ledger';

/** One ledger row as the routes answer it (`issuedAt` in ISO 8601). */
export type LedgerRowJson = Omit<LedgerEntry, 'issuedAt' | 'status'> & {
  readonly issuedAt: string;
  readonly status: string;
};

const HEADER = 'number,period,seq,issued_at,status,reference,reason\r\n';

/** Rows of the ledger as CSV lines, the header first when `header`. */
export function ledgerCsv(entries: readonly LedgerRowJson[], header: boolean): string {
  let out = header ? HEADER : '';
  for (const e of entries)
    out += [e.number, e.period, e.seq, e.issuedAt, e.status, text(e.reference), text(e.reason)].join(',') + '\r\n';
  return out;
}

function text(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
