/** A count that starts over when its window ends: the in-process per-second limit, auth failures, repeats. */
export class FixedWindow {
  /** When the current window started (ms of the caller's clock). */
  private start = Number.NEGATIVE_INFINITY;
  count = 0;

  constructor(
    readonly windowMs: number,
    /** Windows on multiples of `windowMs` (whole seconds) rather than from the first event. */
    private readonly aligned = false,
  ) {}

  /** Starts a new window, counting 0, when the current one ended before `now`; returns this. */
  at(now: number): this {
    // Aligned: any other window, an earlier one too (a wall clock set back), starts at 0.
    const start = this.aligned ? Math.floor(now / this.windowMs) * this.windowMs : now;
    if (this.aligned ? start !== this.start : now - this.start >= this.windowMs) {
      this.start = start;
      this.count = 0;
    }
    return this;
  }

  /** Ms until the window holding `now` ends (0 or less once it has). */
  leftAt(now: number): number {
    return this.start + this.windowMs - now;
  }
}
