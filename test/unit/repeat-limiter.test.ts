import { describe, expect, it } from 'vitest';
import { RepeatedLines } from '../../src/logger';
import { LOOP_FAILURE_LIMITS, RepeatLimiter } from '../../src/repeat-limiter';
import { FakeClock } from '../support/clock';
import { recordingLog } from '../support/log';

describe('RepeatLimiter', () => {
  it('lets a key through at once, then once a window, the next one carrying the count held back', () => {
    const clock = new FakeClock();
    const limiter = new RepeatLimiter(clock, { windowMs: 1000, maxKeys: 10 });
    expect(limiter.admit('a')).toBe(0);
    expect([1, 2, 3].map(() => limiter.admit('a'))).toEqual([undefined, undefined, undefined]);
    // Another key has its own window.
    expect(limiter.admit('b')).toBe(0);
    clock.advance(999);
    expect(limiter.admit('a')).toBeUndefined();
    clock.advance(1);
    expect(limiter.admit('a')).toBe(4);
    expect(limiter.admit('a')).toBeUndefined();
    clock.advance(1000);
    expect(limiter.admit('a')).toBe(1);
    expect(limiter.admit('b')).toBe(0);
  });

  it('keeps the latest occurrence held back, and sweep hands its count on once the key fell silent a window', () => {
    const clock = new FakeClock();
    const heldBack: [string, number][] = [];
    const limiter = new RepeatLimiter<string>(clock, {
      windowMs: 1000,
      maxKeys: 10,
      heldBack: (latest, count) => heldBack.push([latest, count]),
    });
    expect(limiter.admit('a', 'a0')).toBe(0);
    limiter.admit('a', 'a1');
    limiter.admit('a', 'a2');
    expect(limiter.admit('b', 'b0')).toBe(0);
    clock.advance(999);
    limiter.sweep();
    expect(heldBack).toEqual([]);
    clock.advance(1);
    limiter.sweep();
    expect(heldBack).toEqual([['a2', 2]]);
    // The swept count was a line written: the next occurrence within a window of it is held.
    expect(limiter.admit('a', 'a3')).toBeUndefined();
    // 'b' held nothing and fell silent: forgotten, so its next one is let through with no count.
    expect(limiter.admit('b', 'b1')).toBe(0);
    clock.advance(1000);
    limiter.drain();
    expect(heldBack).toEqual([
      ['a2', 2],
      ['a3', 1],
    ]);
    expect(limiter.admit('a', 'a4')).toBe(0);
  });

  it('caps what it lets through per second over all keys; a key held by the cap goes through with its count later', () => {
    const clock = new FakeClock();
    const limiter = new RepeatLimiter(clock, { windowMs: 60_000, perSecond: 10, maxKeys: 100 });
    const keys = Array.from({ length: 15 }, (_, i) => `e${i}`);
    expect(keys.map((k) => limiter.admit(k)).filter((n) => n !== undefined)).toHaveLength(10);
    clock.advance(999);
    expect(limiter.admit('e14')).toBeUndefined();
    clock.advance(1);
    // The five the cap held go through now: 'e14' with the two occurrences held.
    expect(keys.slice(10).map((k) => limiter.admit(k))).toEqual([1, 1, 1, 1, 2]);
    // The first ten are still inside their own minute.
    expect(keys.slice(0, 10).map((k) => limiter.admit(k))).toEqual(Array(10).fill(undefined));
  });

  it('starts over when the table is full, handing on the counts it held (bounded memory)', () => {
    const clock = new FakeClock();
    const heldBack: [string, number][] = [];
    const limiter = new RepeatLimiter<string>(clock, {
      windowMs: 1000,
      maxKeys: 3,
      heldBack: (latest, count) => heldBack.push([latest, count]),
    });
    for (const k of ['a', 'b', 'c']) limiter.admit(k, k);
    limiter.admit('a', 'a again');
    expect(limiter.admit('d', 'd')).toBe(0);
    expect(heldBack).toEqual([['a again', 1]]);
    // 'a' was forgotten with the rest: let through again at once.
    expect(limiter.admit('a', 'a')).toBe(0);
  });

  it('forgets a key (a retired entity)', () => {
    const clock = new FakeClock();
    const limiter = new RepeatLimiter(clock, LOOP_FAILURE_LIMITS);
    expect(limiter.admit('orders')).toBe(0);
    expect(limiter.admit('orders')).toBeUndefined();
    limiter.forget('orders');
    expect(limiter.admit('orders')).toBe(0);
  });

  it('loop failures: an entity failing every tick never hides another first failure; an outage writes ten lines a second', () => {
    const clock = new FakeClock();
    const limiter = new RepeatLimiter(clock, LOOP_FAILURE_LIMITS);
    const written: string[] = [];
    const fail = (key: string) => limiter.admit(key) !== undefined && written.push(key);
    for (let tick = 0; tick < 50; tick++) {
      fail('stuck');
      clock.advance(100);
    }
    fail('other');
    expect(written).toEqual(['stuck', 'other']);
    written.length = 0;
    clock.advance(1000);
    for (let i = 0; i < 1000; i++) fail(`entity-${i}`);
    expect(written).toHaveLength(10);
    clock.advance(1000);
    for (let i = 0; i < 1000; i++) fail(`entity-${i}`);
    expect(written).toHaveLength(20);
  });
});

describe('RepeatedLines', () => {
  it('writes a message at once, then its repeats as one counted line per window; info passes through', () => {
    let now = 0;
    const repeats = new RepeatedLines({ monotonic: () => now });
    const { lines, log } = recordingLog();
    const wrapped = repeats.wrap(log);
    for (let i = 0; i < 500; i++) {
      wrapped.error({ err: `e${i}` }, 'dependency unavailable');
      wrapped.warn({ entityKey: i % 2 ? 'a' : 'b', alarm: 'pool_exhausted' }, 'alarm');
      wrapped.info({ i }, 'request');
    }
    expect(lines.filter((l) => l.level !== 'info')).toHaveLength(3);
    expect(lines.filter((l) => l.level === 'info')).toHaveLength(500);
    now = 1000;
    repeats.sweep();
    const counted = lines.filter((l) => l.obj.repeated);
    expect(counted.map((l) => l.obj.repeated).sort()).toEqual([249, 249, 499]);
    // The count rides on the latest line held back.
    expect(counted.find((l) => l.msg === 'dependency unavailable')?.obj.err).toBe('e499');
    now = 2000;
    repeats.sweep();
    expect(lines.filter((l) => l.level !== 'info')).toHaveLength(6);
    wrapped.error({}, 'dependency unavailable');
    expect(lines.filter((l) => l.level !== 'info')).toHaveLength(7);
  });

  it('a line written after the window carries the count held back before it', () => {
    let now = 0;
    const repeats = new RepeatedLines({ monotonic: () => now });
    const { lines, log } = recordingLog();
    const wrapped = repeats.wrap(log);
    for (let i = 0; i < 3; i++) wrapped.warn({ code: 'unavailable', i }, 'request failed');
    now = 1000;
    wrapped.warn({ code: 'unavailable', i: 3 }, 'request failed');
    expect(lines.map((l) => [l.obj.i, l.obj.repeated])).toEqual([
      [0, undefined],
      [3, 2],
    ]);
  });

  it("tells children apart by their bindings, folds a foldInfo child's info lines, and flushes counts on shutdown", () => {
    const repeats = new RepeatedLines({ monotonic: () => 0 });
    const { lines, log } = recordingLog();
    const wrapped = repeats.wrap(log);
    const refiller = wrapped.child({ component: 'refiller' });
    const http = wrapped.child({ component: 'http' }, { foldInfo: true });
    for (let i = 0; i < 4; i++) {
      refiller.error({ entityKey: 'orders' }, 'refill failed');
      wrapped.error({ entityKey: 'orders' }, 'refill failed');
      http.info({ method: 'POST', route: '/apps/:key/ids', status: 429 }, 'request');
    }
    expect(lines.map((l) => [l.level, l.obj.component])).toEqual([
      ['error', 'refiller'],
      ['error', undefined],
      ['info', 'http'],
    ]);
    repeats.drain();
    expect(lines.slice(3).map((l) => [l.obj.component, l.obj.repeated])).toEqual([
      ['refiller', 3],
      [undefined, 3],
      ['http', 3],
    ]);
  });
});
