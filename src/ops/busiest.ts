import type { Clock } from '../clock';

/** Ids served per entity over a sliding window of buckets: "busiest" for `/metrics` and the dashboard. */
export class RecentServed {
  private readonly buckets: { start: number; counts: Map<string, number> }[] = [];
  private readonly bucketMs: number;

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {
    this.bucketMs = Math.max(1, Math.floor(windowMs / 6));
  }

  add(entityKey: string, count: number): void {
    const now = this.clock.now();
    let current = this.buckets.at(-1);
    if (!current || now - current.start >= this.bucketMs) {
      current = { start: now - (now % this.bucketMs), counts: new Map() };
      this.buckets.push(current);
    }
    current.counts.set(entityKey, (current.counts.get(entityKey) ?? 0) + count);
    this.expire(now);
  }

  /** Ids per second of each entity served in the window. */
  rates(): Map<string, number> {
    const now = this.clock.now();
    this.expire(now);
    const seconds = this.windowMs / 1000;
    const out = new Map<string, number>();
    for (const b of this.buckets) for (const [k, n] of b.counts) out.set(k, (out.get(k) ?? 0) + n / seconds);
    return out;
  }

  private expire(now: number): void {
    while (this.buckets.length && this.buckets[0].start <= now - this.windowMs) this.buckets.shift();
  }
}

/** The `limit` busiest `candidates` by their largest score in any source, then idle ones; ties by key, not to flap. */
export function busiest(limit: number, candidates: Iterable<string>, ...sources: Map<string, number>[]): Set<string> {
  const scores = new Map<string, number>();
  const idle: string[] = [];
  for (const key of candidates) {
    let score = 0;
    for (const source of sources) score = Math.max(score, source.get(key) ?? 0);
    if (score > 0) scores.set(key, score);
    else idle.push(key);
  }
  const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const chosen = [...scores]
    .sort((a, b) => b[1] - a[1] || byKey(a[0], b[0]))
    .slice(0, limit)
    .map(([k]) => k);
  if (chosen.length < limit) chosen.push(...idle.sort(byKey).slice(0, limit - chosen.length));
  return new Set(chosen);
}
