import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import type { EntityConfig } from '../entities/entity';
import type { Segment } from '../segment/allocator';
import { shuffle } from '../segment/shuffle';
import type { IdStride } from '../segment/stride';
import type { PoolStore } from './pool-store';

/** Ids per push call: bounds how long one call blocks Redis (~5 ms here). */
const PUSH_IDS_PER_CALL = 10_000;
/** Push calls on the wire at once: overlaps building ids with Redis work (measured: 4 is past the knee). */
const PUSHES_IN_FLIGHT = 4;

/**
 * Pushes a reserved segment in order through {@link pushInCalls}, a `trend` entity's steps shuffled (not guessable,
 * still growing step by step). One 1,000,000-id RPUSH (27 MB) stalled this process up to 1.2 s under load, lock
 * renewals too; 10,000 a call, at most 0.65 s, and the refill as fast (0.8–1.0 s).
 */
export async function pushSegment(
  store: Pick<PoolStore, 'push'>,
  deploymentStride: IdStride,
  entity: EntityConfig,
  segment: Segment,
  counts: { fenceRefusals: number },
): Promise<'ok' | 'fenced' | 'epoch_changed'> {
  const stride = deploymentStride.of(entity);
  return pushInCalls(entity, segment.start, segment.end - 1n, async (from, last) => {
    const ids = stride.pushIds(from, last + 1n);
    // Trend: each step shuffled within itself (a push holds whole steps).
    if (entity.mode === 'trend')
      for (let s = 0; s < ids.length; s += entity.step) shuffle(ids, s, Math.min(s + entity.step, ids.length));
    const result = await store.push(entity.key, ids, stride.toId(from), stride.toId(last));
    // Reported by the caller, which tells a stale segment from a database behind the fence.
    if (result.kind === 'fenced') counts.fenceRefusals++;
    return result.kind;
  });
}

/**
 * Pushes `first..last` (inclusive, positions on the line) in order, in calls of {@link PUSH_IDS_PER_CALL} (a trend
 * entity's of whole steps, so a call's lowest id is its first step's start) made by `send`, up to
 * {@link PUSHES_IN_FLIGHT} on the wire, the event loop free between two (four 1,000,000-id trend steps built back to
 * back stalled it 4 s). The first call not `ok` is the answer and none is sent after: what refused it only moves on.
 */
export async function pushInCalls<R extends string>(
  entity: Pick<EntityConfig, 'mode' | 'step'>,
  first: bigint,
  last: bigint,
  send: (from: bigint, last: bigint) => Promise<R | 'ok'>,
): Promise<R | 'ok'> {
  const perCall =
    entity.mode === 'trend'
      ? BigInt(entity.step) * BigInt(Math.max(1, Math.floor(PUSH_IDS_PER_CALL / entity.step)))
      : BigInt(PUSH_IDS_PER_CALL);
  const inFlight: Promise<R | 'ok'>[] = [];
  let outcome: R | 'ok' = 'ok';
  const settleOldest = async () => {
    const result = await inFlight.shift();
    if (outcome === 'ok' && result !== undefined) outcome = result;
  };
  try {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- settleOldest sets outcome during the loop's awaits.
    for (let from = first; from <= last && outcome === 'ok'; from += perCall) {
      const call = send(from, from + perCall - 1n < last ? from + perCall - 1n : last);
      // Handled now, awaited in order below: one failing while an earlier one is awaited must not count as unhandled.
      call.catch(() => undefined);
      inFlight.push(call);
      if (inFlight.length >= PUSHES_IN_FLIGHT) await settleOldest();
      else await setImmediatePromise();
    }
    while (inFlight.length) await settleOldest();
  } catch (err) {
    // Calls already sent settle before the lock is released; then the first failure (the caller logs it; invariant 7).
    await Promise.allSettled(inFlight);
    throw err;
  }
  return outcome;
}

export { shuffle };
