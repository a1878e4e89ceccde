/**
 * Forecasts no other id service publishes: how long until a pool runs dry,
 * and until an entity's ids pass 2^53 (the largest integer a JavaScript
 * number holds exactly) or 2^63 (the end of a signed 64-bit id). Pure
 * functions of samples; the sampler feeds them and metrics/alarms read them.
 */

import { INT63_LIMIT, JS_SAFE_LIMIT } from '../limits';

/** One observation of an entity, from one sampler run. */
export interface PoolSample {
  /** Wall-clock ms. */
  readonly at: number;
  /** Ids ready in the pool. */
  readonly size: number;
  /** `current_offset`: every number below it has been reserved. */
  readonly offset: bigint;
  /** Ids this instance has handed out so far (a counter; exact, but only ours). */
  readonly served?: number;
  /**
   * Ids taken from the pool so far by everyone (Redis's pushed counter less
   * the size, read at one instant: exact, every pop counted; the sampler
   * always has it, the rates work without it). It starts again when a pool
   * is reset.
   */
  readonly taken?: number;
  /** A business number's period: its sequence, and so `taken`, starts again with the next. */
  readonly period?: string;
}

export interface Rates {
  /** Ids taken per second by everyone (HTTP on any instance, direct LPOP). */
  readonly takePerSecond: number;
  /** Numbers reserved per second from the database (number-line units). */
  readonly reservePerSecond: number;
}

/**
 * Rates between the oldest sample within `windowMs` of the newest and the
 * newest. Taken: the growth of the pool's take counter (exact, every
 * consumer of a shared Redis pool: other instances, direct LPOP) when both
 * samples have one and it did not start again in between (a pool reset);
 * otherwise reserved − growth of the pool, which a refill caught between its
 * reservation and its push skews by up to one refill, either way. Never
 * below what this instance alone served in the window (an exact count), and
 * never below 0.
 */
export function ratesOf(samples: readonly PoolSample[], windowMs: number): Rates {
  if (samples.length < 2) return { takePerSecond: 0, reservePerSecond: 0 };
  const last = samples[samples.length - 1];
  let from = samples.length - 2;
  while (from > 0 && last.at - samples[from - 1].at <= windowMs) from--;
  const first = samples[from];
  const seconds = (last.at - first.at) / 1000;
  if (seconds <= 0) return { takePerSecond: 0, reservePerSecond: 0 };
  const reserved = Number(last.offset - first.offset);
  // The take counter's growth, unless it started again (a pool reset) or a sample has none.
  const counted = first.taken !== undefined && last.taken !== undefined && last.taken >= first.taken;
  const taken = counted ? last.taken - first.taken : reserved - (last.size - first.size);
  const servedHere = (last.served ?? 0) - (first.served ?? 0);
  return { takePerSecond: Math.max(0, taken, servedHere) / seconds, reservePerSecond: Math.max(0, reserved / seconds) };
}

/** Seconds until `size` ids are gone at `perSecond`, ignoring refills; +Inf when nothing is taken. */
export function secondsUntilDry(size: number, perSecond: number): number {
  if (size <= 0) return 0;
  return perSecond > 0 ? size / perSecond : Number.POSITIVE_INFINITY;
}

/**
 * Seconds until the highest reserved id reaches `limit` when ids grow by
 * `idsPerSecond`: 0 when already there, +Inf when they do not grow.
 */
export function secondsUntilPass(highestId: bigint, limit: bigint, idsPerSecond: number): number {
  if (highestId >= limit - 1n) return 0;
  if (!(idsPerSecond > 0)) return Number.POSITIVE_INFINITY;
  return Number(limit - 1n - highestId) / idsPerSecond;
}

/** When the service-wide snowflake layout runs out, in Unix ms (undefined = never). */
export interface SnowflakeForecast {
  timeExhaustedAt: number;
  jsSafeLimitAt: number | undefined;
  /** The layout's region (IDPOOL_REGION), when it has region bits: the dashboard names it. */
  region?: number;
}

/** Everything forecast for one segment entity. */
export interface EntityForecast extends Rates {
  readonly poolDrySeconds: number;
  readonly jsSafeSeconds: number;
  readonly int63Seconds: number;
  /** Highest id reserved so far (`-1` before the first reservation). */
  readonly highestId: bigint;
}

/**
 * Forecast for one entity from its samples. `toId` maps a number of the line
 * to its id (stride); `idsPerNumber` is how much an id grows per
 * number (the stride count).
 *
 * The limits are approached by the highest *reserved* id at the *take* rate:
 * a pool is bounded, so over any long stretch the number line advances
 * exactly as fast as ids are taken, while the raw reservation rate jumps
 * with every refill (a fresh 300k-id pool filled in one second would
 * forecast 2^53 300k times too early). Starting from the highest reserved id
 * makes the forecast early by at most one pool's worth of ids.
 */
export function forecastEntity(
  samples: readonly PoolSample[],
  windowMs: number,
  startOffset: bigint,
  toId: (n: bigint) => bigint,
  idsPerNumber: number,
): EntityForecast | undefined {
  const last = samples.at(-1);
  if (!last) return undefined;
  const { takePerSecond, reservePerSecond } = ratesOf(samples, windowMs);
  const highestId = last.offset > startOffset ? toId(last.offset - 1n) : -1n;
  const idRate = takePerSecond * idsPerNumber;
  return {
    takePerSecond,
    reservePerSecond,
    poolDrySeconds: secondsUntilDry(last.size, takePerSecond),
    jsSafeSeconds: secondsUntilPass(highestId, JS_SAFE_LIMIT, idRate),
    int63Seconds: secondsUntilPass(highestId, INT63_LIMIT, idRate),
    highestId,
  };
}

/** Keeps the last `capacity` items, oldest first. */
export class Ring<T> {
  private readonly items: T[] = [];

  constructor(readonly capacity: number) {}

  /** The key's ring in `rings`: a new one when there is none or `restart`, the old one's latest items in it when it is smaller. */
  static in<T>(rings: Map<string, Ring<T>>, key: string, capacity: number, restart = false): Ring<T> {
    const old = restart ? undefined : rings.get(key);
    if (old && old.capacity >= capacity) return old;
    const ring = new Ring<T>(capacity);
    for (const item of old?.items ?? []) ring.push(item);
    rings.set(key, ring);
    return ring;
  }

  push(item: T): void {
    this.items.push(item);
    if (this.items.length > this.capacity) this.items.splice(0, this.items.length - this.capacity);
  }

  toArray(): readonly T[] {
    return this.items;
  }
}
