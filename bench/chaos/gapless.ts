/**
 * The chaos run's gapless series (issue 47): one entity whose client sends
 * each take with an Idempotency-Key across its retries, and the checker of
 * its ledger after the run: the audit of every period it answered in shows
 * no hole and no duplicate, every number answered is in the ledger (issued,
 * or entered lost after a restore), and no number was answered twice.
 */
import type { EntitySpec } from './load';
import type { NumberTake } from './numbers';

const FORMAT = 'G{yyyy}{MM}{dd}-{seq:9}';
/** `G20261128-000000001`: the period is the eight digits after the G. */
const periodOf = (number: string) => number.slice(1, 9);

export function gaplessSpec(runTag: string): EntitySpec {
  return {
    key: `gap-${runTag}`,
    mode: 'monotonic',
    pauseMs: 20,
    maxBatch: 5,
    registration: { format: FORMAT, gapless: true },
    numbers: true,
    gapless: true,
  };
}

interface LedgerRow {
  number: string;
  status: string;
}

/** Problems found in the ledger, one line each, and a summary. */
export async function checkGapless(
  url: string,
  key: string,
  secret: string,
  takes: readonly NumberTake[],
): Promise<{ problems: string[]; summary: string }> {
  const answered = takes.flatMap((t) => t.numbers);
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const n of answered) {
    if (seen.has(n)) problems.push(`${key}: ${n} answered twice`);
    seen.add(n);
  }
  const ledger = new Map<string, string>();
  const audits: string[] = [];
  for (const period of new Set(answered.map(periodOf))) {
    const audit = (await get(`${url}/apps/${key}/numbers/audit?period=${period}`, secret)) as {
      issued: number;
      voided: number;
      lost: number;
      holes: { from: string; to: string }[];
      duplicates: string[];
      counter: string;
      last: string | null;
    };
    if (audit.holes.length)
      problems.push(
        `${key} ${period}: holes ${JSON.stringify(audit.holes)} (counter ${audit.counter}, ledger's last row ${audit.last}, ${audit.lost} lost)`,
      );
    if (audit.duplicates.length) problems.push(`${key} ${period}: duplicates ${audit.duplicates.join(', ')}`);
    audits.push(`${period}: ${audit.issued} issued, ${audit.lost} lost`);
    for (let after = '0'; ;) {
      const page = (await get(`${url}/apps/${key}/numbers?period=${period}&limit=1000&after=${after}`, secret)) as {
        numbers: LedgerRow[];
        next: string | null;
      };
      for (const row of page.numbers) ledger.set(row.number, row.status);
      if (page.next === null) break;
      after = page.next;
    }
  }
  for (const n of answered) if (!ledger.has(n)) problems.push(`${key}: ${n} was answered but is not in the ledger`);
  return {
    problems,
    summary: `gapless ${key}: ${answered.length} numbers answered, ${audits.join('; ') || 'none'}, ${problems.length} problems`,
  };
}

async function get(url: string, secret: string): Promise<unknown> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${secret}` }, signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${(await res.text()).slice(0, 200)}`);
  return res.json();
}
