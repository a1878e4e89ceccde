/**
 * Requests per key (an entity) gathered in one event-loop turn, handed to `flush` in order with their counts' sum
 * on `setImmediate`: after the poll phase, so the whole turn's requests are in. A group closes at `maxTotal` ids.
 */
export class TurnGroups<R extends { readonly count: number }> {
  private readonly open = new Map<string, { requests: R[]; total: number }>();

  constructor(
    private readonly maxTotal: number,
    private readonly flush: (requests: R[], total: number) => void,
  ) {}

  add(key: string, request: R): void {
    let group = this.open.get(key);
    if (!group || group.total + request.count > this.maxTotal) {
      const fresh = { requests: [] as R[], total: 0 };
      this.open.set(key, fresh);
      setImmediate(() => {
        if (this.open.get(key) === fresh) this.open.delete(key);
        this.flush(fresh.requests, fresh.total);
      });
      group = fresh;
    }
    group.requests.push(request);
    group.total += request.count;
  }
}

/** One request waiting in a group for its share of one call, whose ids come as `I`. */
export interface Waiter<E, I> {
  readonly count: number;
  readonly entity: E;
  resolve: (ids: I) => void;
  reject: (err: unknown) => void;
}

/** Hands each waiter its `count` ids of `ids` (an array, or TakenIds), in order. */
export function share<E, I extends { slice(from: number, to: number): I }>(
  waiters: readonly Waiter<E, I>[],
  ids: I,
): void {
  let from = 0;
  for (const w of waiters) w.resolve(ids.slice(from, (from += w.count)));
}
