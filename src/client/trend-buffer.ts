/** How a `trend` entity's local buffer is sized. */
export interface BufferOptions {
  /** Ids kept ready in this process. */
  size: number;
  /** A prefetch starts when fewer than this many are left. Default: half of `size`. */
  refillBelow?: number;
  /** Most ids asked for in one request, at most the entity's `maxSizePerTimes`. Default: min(size, 1000). */
  batch?: number;
}

/** The service's default `maxSizePerTimes`. */
const DEFAULT_BATCH = 1000;

/**
 * Local ids of one `trend` entity: its ids need only grow segment by segment, so handing them out a little later keeps
 * its contract (a `monotonic` order must come from the shared pool). Ids held at exit are wasted, never repeated.
 */
export class TrendBuffer {
  private ids: string[] = [];
  private head = 0;
  private filling: Promise<void> | undefined;
  private readonly size: number;
  private readonly refillBelow: number;
  readonly batch: number;

  constructor(
    private readonly fetchIds: (count: number) => Promise<string[]>,
    options: BufferOptions,
    private readonly onPrefetchError: (err: unknown) => void,
  ) {
    this.size = options.size;
    this.batch = options.batch ?? Math.min(options.size, DEFAULT_BATCH);
    this.refillBelow = options.refillBelow ?? Math.floor(options.size / 2);
  }

  /** Ids ready in this process. */
  get available(): number {
    return this.ids.length - this.head;
  }

  async take(count: number): Promise<string[]> {
    // Larger than one batch: the buffer cannot hold it, ask for it directly.
    if (count > this.batch) return this.fetchIds(count);
    while (this.available < count) await this.fill();
    const taken = this.ids.slice(this.head, this.head + count);
    this.head += count;
    if (this.head > 1024 && this.head * 2 > this.ids.length) {
      this.ids = this.ids.slice(this.head);
      this.head = 0;
    }
    if (this.available < this.refillBelow) this.fill().catch(this.onPrefetchError);
    return taken;
  }

  /** Starts filling in the background (e.g. right after start-up). */
  prefetch(): void {
    if (this.available < this.size) this.fill().catch(this.onPrefetchError);
  }

  /** One fetch at a time; everyone who needs ids waits for the same one. */
  private fill(): Promise<void> {
    if (!this.filling) {
      const want = Math.max(1, Math.min(this.batch, this.size - this.available));
      this.filling = this.fetchIds(want)
        .then((ids) => {
          // No spread: a batch may hold up to 100k ids, more than a call's arguments.
          for (const id of ids) this.ids.push(id);
        })
        .finally(() => {
          this.filling = undefined;
        });
    }
    return this.filling;
  }
}
