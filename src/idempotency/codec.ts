import type { StoredAnswer } from './store';

const DECIMAL = /^\d+$/;

/**
 * `count;runs`, a run one id or `first+diff*n`: 1,000 monotonic ids take ~30 bytes, not ~16 KB of JSON. Other
 * than decimal ids (business numbers) are `count;[json]`: a run never begins with `[`.
 */
export function encodeAnswer(count: number, ids: string[]): string {
  if (!ids.every((id) => DECIMAL.test(id))) return `${count};${JSON.stringify(ids)}`;
  const runs: string[] = [];
  let i = 0;
  while (i < ids.length) {
    const first = BigInt(ids[i]);
    let n = 1;
    const diff = i + 1 < ids.length ? BigInt(ids[i + 1]) - first : 0n;
    if (diff > 0n) while (i + n < ids.length && BigInt(ids[i + n]) === first + diff * BigInt(n)) n++;
    runs.push(n === 1 ? ids[i] : `${ids[i]}+${diff}*${n}`);
    i += n;
  }
  return `${count};${runs.join(',')}`;
}

/** The inverse of {@link encodeAnswer}. */
export function decodeAnswer(raw: string): StoredAnswer {
  const split = raw.indexOf(';');
  const count = Number(raw.slice(0, split));
  const body = raw.slice(split + 1);
  if (body.startsWith('[')) return { count, ids: JSON.parse(body) as string[] };
  const ids: string[] = [];
  for (const run of body === '' ? [] : body.split(',')) {
    const m = /^(\d+)\+(\d+)\*(\d+)$/.exec(run);
    if (!m) {
      ids.push(run);
      continue;
    }
    const [first, diff, n] = m.slice(1).map(BigInt);
    for (let k = 0n; k < n; k++) ids.push((first + diff * k).toString());
  }
  return { count, ids };
}
