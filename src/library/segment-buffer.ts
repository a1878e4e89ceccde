/** An id as the library hands it out: `bigint` by default, `number` when proven below 2^53. */
export type Id = bigint | number;

/**
 * One reserved segment, already mapped to ids: it hands out `value`,
 * `value + stride`, … while `value < max`. Fields are public and mutable
 * because `next()` reads and bumps them directly on its hot path.
 */
export class BufferedSegment<T extends Id> {
  constructor(
    /** The next id to hand out. */
    public value: T,
    /** The first id past this segment. */
    readonly max: T,
    /** How many numbers of the entity's line the segment holds. */
    readonly step: number,
    /**
     * Once `value` reaches this id the next segment starts loading; set to
     * `max` when the load has started so the check fires once per segment.
     */
    public loadNextAt: T,
  ) {}
}

/**
 * Leaf's double buffer for one entity: ids come from `segments[currentPos]`
 * while the other slot is being filled; when the current one runs out and
 * `nextReady` is set, the two swap.
 */
export class SegmentBuffer<T extends Id> {
  readonly segments: [BufferedSegment<T>, BufferedSegment<T>];
  currentPos = 0;
  /** The slot after `currentPos` holds a loaded, unused segment. */
  nextReady = false;
  /** The reservation under way, if any (at most one per entity, so segments come back in order). */
  loading: Promise<void> | undefined;
  /** Size of the last reservation; the adaptive step starts from it. */
  step = 0;
  /** Monotonic ms of the last reservation, for the adaptive step. */
  lastReserveAt: number | undefined;
  /** The entity's configured step: the adaptive step never goes below it. */
  minStep = 0;
  /** Monotonic ms the entity's configuration was last read. */
  configReadAt: number | undefined;
  /** Why the last load failed, and when (monotonic ms). Cleared by the next success. */
  failure: Error | undefined;
  failedAt = 0;
  segmentsLoaded = 0;

  constructor(
    readonly entityKey: string,
    empty: () => BufferedSegment<T>,
  ) {
    this.segments = [empty(), empty()];
  }

  current(): BufferedSegment<T> {
    return this.segments[this.currentPos];
  }

  /** Makes the loaded segment current; false when none is ready. */
  switchToNext(): boolean {
    if (!this.nextReady) return false;
    this.currentPos ^= 1;
    this.nextReady = false;
    return true;
  }

  /** Puts a freshly reserved segment in the slot that is not current. */
  install(segment: BufferedSegment<T>): void {
    this.segments[this.currentPos ^ 1] = segment;
    this.nextReady = true;
    this.segmentsLoaded++;
  }
}
