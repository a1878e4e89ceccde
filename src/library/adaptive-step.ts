/**
 * Leaf's adaptive step, with bounds: a segment that was used up faster than
 * `targetSegmentMs` doubles the next reservation, one that lasted more than
 * twice as long halves it, anything between keeps it. The step stays within
 * `[minStep, maxStep]`, and `minStep` is the entity's configured step.
 *
 * Why doubling and halving: the step converges on "one reservation per
 * target interval" in a few segments whichever way the rate moves, and a
 * reservation is never more than 2× what the last interval needed, which
 * bounds the ids wasted when a process stops.
 */
export function nextStep(
  previous: number,
  sinceLastReserveMs: number,
  bounds: { minStep: number; maxStep: number; targetSegmentMs: number },
): number {
  const { minStep, maxStep, targetSegmentMs } = bounds;
  let step = previous;
  if (sinceLastReserveMs < targetSegmentMs) step = previous * 2;
  else if (sinceLastReserveMs >= 2 * targetSegmentMs) step = Math.floor(previous / 2);
  return Math.min(Math.max(step, minStep), Math.max(maxStep, minStep));
}
