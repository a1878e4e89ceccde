import type { IncumbentDatabase, IncumbentKind, IncumbentSegment } from '../../src/segment/incumbent-rows';
import type { LiveEntity } from '../../src/segment/live-allocator';

/**
 * One incumbent row in memory, moved as Leaf's `max_id + step` or Tinyid's
 * `max_id + step·delta` moves it: by idpool (`reserve`) or by one of the
 * incumbent's own servers (`serverTakes`).
 */
export class FakeIncumbentRow implements IncumbentDatabase {
  down: Error | undefined;
  constructor(
    readonly kind: IncumbentKind,
    public maxId: bigint,
  ) {}

  async reserve(_key: string, size: number, spacing: { delta: number }): Promise<IncumbentSegment> {
    if (this.down) throw this.down;
    return this.move(this.kind === 'leaf' ? BigInt(size) : BigInt(size) * BigInt(spacing.delta));
  }

  /** An incumbent server's segment of `step`, as ids it hands out: Leaf's [low, high), Tinyid's (low, high] ≡ remainder. */
  serverTakes(step: number, spacing: LiveEntity): bigint[] {
    const { low, high } = this.move(BigInt(step));
    const ids: bigint[] = [];
    if (this.kind === 'leaf') for (let id = low; id < high; id++) ids.push(id);
    else
      for (let id = low + 1n; id <= high; id++)
        if (id % BigInt(spacing.delta) === BigInt(spacing.remainder)) ids.push(id);
    return ids;
  }

  private move(by: bigint): IncumbentSegment {
    const low = this.maxId;
    this.maxId += by;
    return this.kind === 'leaf' ? { low, high: this.maxId } : { low, high: this.maxId };
  }

  async ping(): Promise<void> {
    if (this.down) throw this.down;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
