import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import type { EntityConfig } from '../entities/entity';
import type { Segment } from '../segment/allocator';
import { shuffle } from '../segment/shuffle';
import type { IdStride } from '../segment/stride';
import type { PoolStore, PushResult } from './pool-store';

/** Ids per push call: bounds how long one call blocks Redis (~5 ms here). */
const PUSH_IDS_PER_CALL = 10_000;
/** Push calls on the wire at once: overlaps building ids with Redis work (measured: 4 is past the knee). */
export const PUSHES_IN_FLIGHT = 4;

/** What a push did: counted into the refiller's stats. */
export interface PushCounts {
  idsPushed: number;
  fenceRefusals: number;
}

/**
 * Pushes a reserved segment step by step, in order. `trend` entities
 * shuffle each step so ids are not guessable but still grow step by step;
 * a trend push call holds whole steps so its lowest id is its first step's
 * start. A monotonic segment is pushed 10,000 ids a call whatever its
 * step: a call is built in one run of the event loop and run by Redis as
 * one command, and a step of 1,000,000 ids (a 27 MB RPUSH) stalled this
 * process for up to 1.2 s under load, delaying everything it does (the
 * refill lock's renewals too); pushed 10,000 at a time, at most 0.65 s,
 * and a 1,000,000-id refill takes as long in isolation (0.8–1.0 s here).
 * Up to PUSHES_IN_FLIGHT calls travel at once (Redis runs them in order on
 * the one connection); once one is refused, every later one is refused
 * too (the fence or epoch marker that refused it only moves up).
 */
export async function pushSegment(
  store: Pick<PoolStore, 'push'>,
  deploymentStride: IdStride,
  entity: EntityConfig,
  segment: Segment,
  counts: PushCounts,
): Promise<'ok' | 'fenced' | 'epoch_changed'> {
  const perCall =
    entity.mode === 'trend'
      ? BigInt(entity.step) * BigInt(Math.max(1, Math.floor(PUSH_IDS_PER_CALL / entity.step)))
      : BigInt(PUSH_IDS_PER_CALL);
  const stride = deploymentStride.of(entity);
  const inFlight: { call: Promise<PushResult>; count: number }[] = [];
  let outcome: 'ok' | 'fenced' | 'epoch_changed' = 'ok';
  const settleOldest = async () => {
    const oldest = inFlight.shift();
    if (!oldest) return;
    const { call, count } = oldest;
    const result = await call;
    if (outcome !== 'ok') return;
    // Reported by the caller, which tells a stale segment from a database behind the fence.
    if (result.kind === 'fenced') {
      outcome = 'fenced';
      counts.fenceRefusals++;
    } else if (result.kind === 'epoch_changed') outcome = 'epoch_changed';
    else counts.idsPushed += count;
  };
  try {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- settleOldest sets outcome during the loop's awaits.
    for (let from = segment.start; from < segment.end && outcome === 'ok'; from += perCall) {
      const to = from + perCall < segment.end ? from + perCall : segment.end;
      const ids = stride.pushIds(from, to);
      // Trend: each step shuffled within itself (a push holds whole steps).
      if (entity.mode === 'trend')
        for (let s = 0; s < ids.length; s += entity.step) shuffle(ids, s, Math.min(s + entity.step, ids.length));
      const call = store.push(entity.key, ids, stride.toId(from), stride.toId(to - 1n));
      // Handled now, awaited in order below: a call that fails while an
      // earlier one is still awaited must not count as unhandled.
      call.catch(() => undefined);
      inFlight.push({ call, count: Number(to - from) });
      // Between two calls, what else this process has to do runs (a call of
      // a 1,000,000-id trend step takes its own run of the event loop; four
      // built back to back stalled it 4 s under load, lock renewals too).
      if (inFlight.length >= PUSHES_IN_FLIGHT) await settleOldest();
      else await setImmediatePromise();
    }
    while (inFlight.length) await settleOldest();
  } catch (err) {
    // Let the calls already sent settle before the lock is released, then
    // report the first failure (the caller logs it; invariant 7).
    await Promise.allSettled(inFlight.map((c) => c.call));
    throw err;
  }
  return outcome;
}

export { shuffle };
