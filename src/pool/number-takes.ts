/**
 * Business numbers as the admin routes and the ops sampler see them
 * ({@link NumberAdmin}, answered by `PeriodLayer`), and a range of them in
 * take order as the pools hold them ({@link numberRun}).
 */
import type { EntityConfig } from '../entities/entity';
import type { Period } from '../numbers/period';
import type { NumberScheme } from '../numbers/scheme';
import type { SeqRange } from '../segment/number-counter';
import type { NumberRun } from './redis-rpush-ids';
import { shuffle } from './segment-push';

/** What the admin routes and the ops sampler ask of business numbers, with or without Redis. */
export interface NumberAdmin {
  /** Moves the counter of period `periodId` up to at least `seq` (a team moving from an INCR counter); resolves to it after. */
  raise(entity: EntityConfig, periodId: string, seq: bigint): Promise<bigint>;
  /** How much of now's period is used, by the clock that decides the period (the ops sampler, `GET /admin/apps`). */
  usage(entity: EntityConfig): Promise<NumberUsage>;
}

/** Now's period of a business-number entity and how much of it is gone. */
export interface NumberUsage {
  /** Now by the deciding clock (Redis's with Redis, the process's without), Unix ms. */
  readonly now: number;
  readonly period: Period;
  /** Sequences of the period no take can have any more: the highest one reserved (pushed to Redis, or reserved in process) less those still ready. */
  readonly used: bigint;
  /** Numbers of the period ready to take. */
  readonly ready: number;
  /** The period's highest sequence, 10^N − 1. */
  readonly capacity: bigint;
  /** N of `{seq:N}`. */
  readonly digits: number;
  readonly timeZone: string;
}

/**
 * Range `range` of `period` in take order (a trend entity's shuffled within
 * each step): as the Redis push writes it, a {@link NumberRun} (sequences as
 * numbers, the date written once) below 2^53; formatted strings beyond it,
 * or when `formatted` (the in-process pool).
 */
export function numberRun(
  scheme: NumberScheme,
  entity: Pick<EntityConfig, 'mode' | 'step'>,
  period: Period,
  range: SeqRange,
  formatted = false,
): NumberRun | string[] {
  const count = Number(range.last - range.first + 1n);
  const big = range.last > BigInt(Number.MAX_SAFE_INTEGER);
  const first = Number(range.first);
  const seqs = big ? Array.from({ length: count }, (_, i) => range.first + BigInt(i)) : consecutive(first, count);
  if (entity.mode === 'trend')
    for (let s = 0; s < count; s += entity.step) shuffle(seqs, s, Math.min(s + entity.step, count));
  if (big || formatted) return Array.from<number | bigint, string>(seqs, scheme.template.formatter(period));
  return { ...scheme.template.parts(period), seqs: seqs as Float64Array };
}

/** `count` sequences from `first`: a loop, not Float64Array.map, whose callback per sequence cost a third of the push's encoding. */
function consecutive(first: number, count: number): Float64Array {
  const seqs = new Float64Array(count);
  for (let i = 0; i < count; i++) seqs[i] = first + i;
  return seqs;
}
