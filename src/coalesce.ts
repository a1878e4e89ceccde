/** A request that can share a call: how many ids it wants. */
export interface Counted {
  readonly count: number;
}

/**
 * Requests per key (an entity) gathered in one event-loop turn, handed to `flush` in order with their counts' sum
 * on `setImmediate`: after the poll phase, so the whole turn's requests are in. A group closes at `maxTotal` ids.
 */
export class TurnGroups<R extends Counted> {
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
export interface Waiter<E, I> extends Counted {
  readonly entity: E;
  resolve: (ids: I) => void;
  reject: (err: unknown) => void;
}

/** Ids that slice like an array (an array of them, or TakenIds). */
export interface Sliceable<I> {
  slice(from: number, to: number): I;
}

/** Hands each waiter its `count` ids of `ids`, in order. */
export function share<E, I extends Sliceable<I>>(
  waiters: readonly Waiter<E, I>[],
  ids: I,
  served?: (waiter: Waiter<E, I>) => void,
): void {
  let from = 0;
  for (const w of waiters) {
    const mine = ids.slice(from, from + w.count);
    from += w.count;
    served?.(w);
    w.resolve(mine);
  }
}
