import { describe, expect, it } from 'vitest';
import { INT63_LIMIT, JS_SAFE_LIMIT } from '../../src/limits';
import {
  type PoolSample,
  Ring,
  forecastEntity,
  ratesOf,
  secondsUntilDry,
  secondsUntilPass,
} from '../../src/ops/forecast';
import { mountedPath } from '../../src/ops/request-log';

const sample = (at: number, size: number, offset: bigint): PoolSample => ({ at, size, offset });

describe('ratesOf', () => {
  it('counts taken ids as reserved minus pool growth, so direct LPOP consumers count too', () => {
    // 10 s: 3000 numbers reserved, pool went 1000 → 1500, so 2500 taken.
    const rates = ratesOf([sample(0, 1000, 0n), sample(5000, 200, 1000n), sample(10_000, 1500, 3000n)], 60_000);
    expect(rates.takePerSecond).toBe(250);
    expect(rates.reservePerSecond).toBe(300);
  });

  it("counts the pool's take counter where both samples have one: a refill reserved but not pushed is not taken", () => {
    // 1000 reserved in the second (not pushed yet), 300 taken by the counter.
    const counted = [
      { at: 0, size: 2000, offset: 2000n, taken: 700 },
      { at: 1000, size: 1700, offset: 3000n, taken: 1000 },
    ];
    expect(ratesOf(counted, 60_000).takePerSecond).toBe(300);
    // The counter started again (a pool reset): the estimate, reserved − growth.
    expect(ratesOf([counted[0], { ...counted[1], taken: 50 }], 60_000).takePerSecond).toBe(1300);
  });

  it('uses only samples inside the window', () => {
    const samples = [sample(0, 0, 0n), sample(50_000, 1000, 1_000_000n), sample(60_000, 500, 1_000_000n)];
    // Window 10 s: only the last two samples: 500 taken in 10 s.
    expect(ratesOf(samples, 10_000).takePerSecond).toBe(50);
    expect(ratesOf(samples, 10_000).reservePerSecond).toBe(0);
  });

  it('never reports less than this instance alone served (a refill mid-push hides takes from the estimate)', () => {
    // First sample caught a 20000-number refill half pushed; 500 were taken since.
    const samples = [
      { at: 0, size: 10_000, offset: 20_000n, served: 0 },
      { at: 1000, size: 19_500, offset: 20_000n, served: 500 },
    ];
    expect(ratesOf(samples, 60_000).takePerSecond).toBe(500);
  });

  it('falls back to the last two samples when the window holds only one', () => {
    expect(ratesOf([sample(0, 100, 0n), sample(100_000, 0, 0n)], 1000).takePerSecond).toBe(1);
  });

  it('is zero with fewer than two samples and never negative', () => {
    expect(ratesOf([sample(0, 5, 0n)], 1000)).toEqual({ takePerSecond: 0, reservePerSecond: 0 });
    // A push landing after its reservation was sampled: the pool grows more than reserved.
    expect(ratesOf([sample(0, 0, 1000n), sample(1000, 1000, 1000n)], 60_000).takePerSecond).toBe(0);
  });
});

describe('secondsUntilDry / secondsUntilPass', () => {
  it('divides what is left by the rate, +Inf when nothing moves, 0 when already there', () => {
    expect(secondsUntilDry(1000, 100)).toBe(10);
    expect(secondsUntilDry(1000, 0)).toBe(Number.POSITIVE_INFINITY);
    expect(secondsUntilDry(0, 0)).toBe(0);
    expect(secondsUntilPass(JS_SAFE_LIMIT - 1001n, JS_SAFE_LIMIT, 100)).toBe(10);
    expect(secondsUntilPass(JS_SAFE_LIMIT - 1n, JS_SAFE_LIMIT, 100)).toBe(0);
    expect(secondsUntilPass(JS_SAFE_LIMIT + 5n, JS_SAFE_LIMIT, 100)).toBe(0);
    expect(secondsUntilPass(0n, JS_SAFE_LIMIT, 0)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('forecastEntity', () => {
  const identity = (n: bigint) => n;

  it('forecasts 2^53 and 2^63 from the highest reserved id at the take rate, not the jumpy reservation rate', () => {
    const start = JS_SAFE_LIMIT - 100_000n;
    const f = forecastEntity([sample(0, 0, start), sample(10_000, 5000, start + 10_000n)], 60_000, start, identity, 1)!;
    expect(f.highestId).toBe(start + 9999n);
    expect(f.reservePerSecond).toBe(1000);
    expect(f.takePerSecond).toBe(500);
    // 2^53 − 1 − highest = 90000 ids, at 500 taken per second.
    expect(f.jsSafeSeconds).toBe(180);
    expect(f.int63Seconds).toBe(Number(INT63_LIMIT - 1n - (start + 9999n)) / 500);
    expect(f.poolDrySeconds).toBe(10);
  });

  it('scales the id growth by the stride count (id = n·c + i)', () => {
    const toId = (n: bigint) => n * 4n + 1n;
    // 1000 numbers reserved and taken in 1 s: ids grow by 4000 a second.
    const f = forecastEntity([sample(0, 0, 0n), sample(1000, 0, 1000n)], 60_000, 0n, toId, 4)!;
    expect(f.highestId).toBe(999n * 4n + 1n);
    expect(f.jsSafeSeconds).toBeCloseTo(Number(JS_SAFE_LIMIT - 1n - f.highestId) / 4000, 0);
  });

  it('reports no highest id before the first reservation and no forecast without samples', () => {
    expect(forecastEntity([sample(0, 0, 500n)], 60_000, 500n, identity, 1)!.highestId).toBe(-1n);
    expect(forecastEntity([], 60_000, 0n, identity, 1)).toBeUndefined();
  });
});

describe('Ring', () => {
  it('keeps the newest items in order', () => {
    const r = new Ring<number>(3);
    for (let i = 1; i <= 5; i++) r.push(i);
    expect(r.toArray()).toEqual([3, 4, 5]);
    expect(r.toArray()).toHaveLength(3);
  });
});

describe('mountedPath', () => {
  it('puts the mount path of a router in front of its route template', () => {
    expect(mountedPath('/admin/apps/orders?x=1', '/apps/:key')).toBe('/admin/apps/:key');
    expect(mountedPath('/apps/orders/ids', '/apps/:key/ids')).toBe('/apps/:key/ids');
    expect(mountedPath('/admin/ui', '/')).toBe('/admin/ui');
    expect(mountedPath('/healthz', '/healthz')).toBe('/healthz');
  });
});
