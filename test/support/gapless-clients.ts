/**
 * Invoice services for the gapless fault tests: clients that send each
 * take with an Idempotency-Key of its own and, on a timeout, a reset
 * connection or a 5xx, send it again with the same key until a 200; and
 * the check every fault ends with (docs/numbers.md "Gapless series").
 */
import { expect } from 'vitest';
import { call } from './http';
import { sleep } from './wait';

export const seqOf = (n: string) => Number(n.slice(n.lastIndexOf('-') + 1));

/** One take as an invoice service sends it: a 200's numbers, or the status and code of the refusal. */
export function gaplessTake(url: string, key: string, secret: string, idem: string | undefined, count = 1) {
  return call<{ ids: string[]; error?: { code: string } }>(`${url}/apps/${key}/ids`, {
    token: secret,
    body: { count, reference: idem ? `ref-${idem}` : undefined },
    headers: idem ? { 'idempotency-key': idem } : {},
  });
}

/** Takes sent again (after a timeout, a reset or a 5xx), and answers a retry found in the ledger (committed, their answer lost). */
export interface RetriesSeen {
  retried: number;
  replayed: number;
  /** Refusals a dependency's fault must not give: a 5xx other than 503, a 503 without Retry-After. */
  wrongRefusals: string[];
}

/** What an invoice service does on a timeout, a reset connection or a 5xx: the same request again, with its key, until a 200. */
async function takeUntilAnswered(
  urls: () => string[],
  key: string,
  secret: string,
  idem: string,
  count: number,
  seen: RetriesSeen = { retried: 0, replayed: 0, wrongRefusals: [] },
) {
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; ; attempt++) {
    const url = urls()[attempt % urls().length];
    if (attempt > 0) seen.retried++;
    try {
      const res = await gaplessTake(url, key, secret, idem, count);
      if (res.status === 200) {
        if (res.headers.get('idempotent-replayed') === 'true') seen.replayed++;
        return res.body.ids;
      }
      if (res.status < 500) throw new Error(`take ${idem}: ${res.status} ${JSON.stringify(res.body)}`);
      if (res.status !== 503 || !res.headers.has('retry-after'))
        seen.wrongRefusals.push(`${res.status} ${JSON.stringify(res.body)}`);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('take ')) throw err;
    }
    if (Date.now() > deadline) throw new Error(`take ${idem}: no answer within 60 s`);
    await sleep(50);
  }
}

/** `clients` invoice services taking 1-3 numbers at a time until stopped; `answered` maps each key to its numbers. */
export function invoiceClients(urls: () => string[], key: string, secret: string, clients = 8) {
  const answered = new Map<string, string[]>();
  const seen: RetriesSeen = { retried: 0, replayed: 0, wrongRefusals: [] };
  let stop = false;
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let i = 0; !stop; i++) {
      const idem = `c${c}-${i}`;
      answered.set(idem, await takeUntilAnswered(urls, key, secret, idem, 1 + (i % 3), seen));
    }
  });
  return {
    answered,
    seen,
    async stop() {
      stop = true;
      await Promise.all(loops);
    },
  };
}

/**
 * Every answered number is in the ledger once, under the key it was
 * answered to; the answered numbers are 1..N with no hole and no
 * duplicate; the ledger holds nothing else (a retry that burnt a number
 * leaves one answered to nobody) and its counter is N (a counter written
 * apart from the ledger leaves it ahead, a hole in the audit).
 */
export async function expectContinuousLedger(
  url: string,
  key: string,
  secret: string,
  answered: ReadonlyMap<string, string[]>,
) {
  const all = [...answered.values()].flat();
  const seqs = all.map(seqOf).sort((a, b) => a - b);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  const audit = await call(`${url}/apps/${key}/numbers/audit`, { token: secret });
  expect(audit.body).toMatchObject({ issued: all.length, counter: String(all.length), holes: [], duplicates: [] });
  const reference = new Map<string, string>();
  for (let after = '0'; ;) {
    const page = await call(`${url}/apps/${key}/numbers?limit=1000&after=${after}`, { token: secret });
    for (const n of page.body.numbers as { number: string; reference: string }[]) reference.set(n.number, n.reference);
    if (page.body.next === null) break;
    after = page.body.next;
  }
  expect(reference.size).toBe(all.length);
  for (const [idem, ids] of answered) for (const id of ids) expect(reference.get(id)).toBe(`ref-${idem}`);
}
