import type { Clock } from '../../src/clock';
import { silentLogger } from '../../src/logger';
import { Demand } from '../../src/pool/demand';
import { Refiller, type RefillerOptions } from '../../src/pool/refiller';
import { FakeSegmentAllocator } from '../../src/segment/fake-allocator';
import { IdStride } from '../../src/segment/stride';

/**
 * A refiller as the unit tests build one: a fake segment allocator, the
 * demand over a minute of `clock`, no stride, a 10 ms tick; `options`
 * name the rest and override these.
 */
export function testRefiller(
  clock: Clock,
  options: Pick<RefillerOptions, 'entities' | 'store' | 'lock' | 'events'> & Partial<RefillerOptions>,
): Refiller {
  return new Refiller({
    allocator: new FakeSegmentAllocator(),
    demand: new Demand({ clock, horizonSeconds: 60 }),
    stride: new IdStride(),
    clock,
    log: silentLogger,
    intervalMs: 10,
    ...options,
  });
}
