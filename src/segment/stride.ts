import { MAX_SAFE_ID } from '../limits';

/** Whether `n` is a safe integer in `[min, below)`. */
const inRange = (n: number, min: number, below = Infinity) => Number.isSafeInteger(n) && n >= min && n < below;

/**
 * The id stride of a deployment (docs/design.md, IDPOOL_CLUSTER_COUNT / _INDEX): the n-th number becomes the
 * id `n·count + index`, so deployments issue disjoint ids; increasing in n, so segment order and fences hold.
 */
export class IdStride {
  private readonly c: bigint;
  private readonly i: bigint;

  constructor(
    readonly count = 1,
    readonly index = 0,
  ) {
    if (!inRange(count, 1)) throw new RangeError(`stride count (IDPOOL_CLUSTER_COUNT) must be >= 1, got ${count}`);
    if (!inRange(index, 0, count))
      throw new RangeError(`stride index (IDPOOL_CLUSTER_INDEX) must be in 0..${count - 1}, got ${index}`);
    this.c = BigInt(count);
    this.i = BigInt(index);
  }

  private readonly spaced = new Map<string, IdStride>();

  /**
   * This stride composed with an entity's spacing (Tinyid's ids ≡ remainder mod delta): `(n·c + i)·delta +
   * remainder` is the stride `c·delta`, `i·delta + remainder`, which every caller mapping numbers to ids uses.
   */
  of(spacing: { readonly delta: number; readonly remainder: number }): IdStride {
    const { delta, remainder } = spacing;
    if (delta === 1 && remainder === 0) return this;
    const key = `${delta}:${remainder}`;
    let composed = this.spaced.get(key);
    if (!composed) {
      if (!inRange(delta, 1) || !inRange(remainder, 0, delta))
        throw new RangeError(
          `entity spacing needs 1 <= delta and 0 <= remainder < delta, got delta ${delta} remainder ${remainder}`,
        );
      composed = new IdStride(this.count * delta, this.index * delta + remainder);
      this.spaced.set(key, composed);
    }
    return composed;
  }

  /** The first number whose id is at least `id` (0 when every id is): where a line starting at a known first safe id begins. */
  firstNumberFrom(id: bigint): bigint {
    return this.numberAbove(id - 1n);
  }

  toId(n: bigint): bigint {
    return this.c === 1n ? n : n * this.c + this.i;
  }

  /** The first number whose id is above `id` (the first number a fence at `id` lets through). */
  numberAbove(id: bigint): bigint {
    if (id < this.i) return 0n;
    return (id - this.i) / this.c + 1n;
  }

  /**
   * Every id of `[start, end)` in order, as a push hands them to its store: numbers below 2^53 (RpushIds writes
   * their digits; 10,000 strings a push cost a busy instance a tenth of its CPU), decimal strings beyond.
   */
  pushIds(start: bigint, end: bigint): Float64Array | string[] {
    if (end <= start) return [];
    if (this.toId(end - 1n) > MAX_SAFE_ID) {
      const out: string[] = [];
      for (let n = start; n < end; n++) out.push(this.toId(n).toString());
      return out;
    }
    const c = Number(this.c);
    const i = Number(this.i);
    const first = Number(start);
    const out = new Float64Array(Number(end - start));
    for (let k = 0; k < out.length; k++) out[k] = (first + k) * c + i;
    return out;
  }

  /** Every id of `[start, end)` as decimal strings, in order: through {@link pushIds}, about 5x faster than bigint. */
  idStrings(start: bigint, end: bigint): string[] {
    const ids = this.pushIds(start, end);
    return ids instanceof Float64Array ? Array.from(ids, String) : ids;
  }
}
