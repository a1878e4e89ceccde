// How long until a pool runs dry, and until an entity's ids pass 2^53 (the largest integer a JavaScript number
// holds exactly) or 2^63: pure functions of the sampler's samples.

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
  /** Ids taken from the pool so far by everyone (pushed less size, read at one instant: exact); restarts on a reset. */
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
 * Rates between the newest sample and the oldest within `windowMs` of it. Taken: the take counter's growth
 * (exact, every consumer) or else reserved − the pool's growth (off by up to a refill caught mid-push);
 * never below what this instance alone served, nor 0.
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

/** Seconds until the highest reserved id reaches `limit` at `idsPerSecond`: 0 when there, +Inf when not growing. */
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
 * Forecast for one entity; `toId` maps a number to its id, `idsPerNumber` is the stride count. Limits are
 * approached from the highest *reserved* id at the *take* rate: the reserve rate jumps with each refill
 * (a 300k-id pool filled in a second would forecast 2^53 300k times too early); early by one pool at most.
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

  /** The key's ring in `rings`: new when none or `restart`, or grown (keeping the latest items) when smaller. */
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
