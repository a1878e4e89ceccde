import { describe, expect, it } from 'vitest';
import { every, untilAligned } from '../../src/schedule';
import { FakeClock, settle } from '../support/clock';

describe('every(): one scheduling style', () => {
  it('sub-second ticks repeat, never overlap, and stop() waits for the run under way', async () => {
    const clock = new FakeClock();
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let finished = 0;
    const task = every(
      10,
      async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        runs++;
        await clock.sleep(25); // longer than the period: the next run must wait
        active--;
        finished++;
      },
      clock,
    );
    task.start();
    task.start(); // a second start is a no-op
    await clock.advanceBy(200, 5);
    const stopping = task.stop();
    await clock.advanceBy(25, 5); // the run under way ends; stop() waits for it
    await stopping;
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(maxActive).toBe(1);
    expect(finished).toBe(runs);
    const after = runs;
    await clock.advanceBy(60, 5);
    expect(runs).toBe(after);
    expect(clock.waiting).toBe(0);
  });

  it('runNow runs at once and shares the no-overlap guard with the schedule', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const task = every(
      1000,
      async () => {
        runs++;
        await clock.sleep(50);
      },
      clock,
    );
    task.start();
    const both = Promise.all([task.runNow(), task.runNow()]);
    await settle(); // the task starts on the next turn, then sleeps 50 ms
    await clock.advanceBy(50, 5);
    await both;
    expect(runs).toBe(1);
    await clock.advanceBy(2100, 50);
    const stopping = task.stop();
    await clock.advanceBy(50, 5);
    await stopping;
    expect(runs).toBeGreaterThanOrEqual(2);
    const after = runs;
    await clock.advanceBy(1100, 50);
    expect(runs).toBe(after);
    expect(clock.waiting).toBe(0);
  });

  it('a failing task does not stop the schedule', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const task = every(
      10,
      () => {
        runs++;
        throw new Error('boom');
      },
      clock,
    );
    task.start();
    await clock.advanceBy(100, 5);
    await task.stop();
    expect(runs).toBeGreaterThanOrEqual(3);
  });

  it('stop() ends the pending sleep at once: nothing waits on the clock afterwards', async () => {
    const clock = new FakeClock();
    const task = every(60_000, () => undefined, clock);
    task.start();
    await settle();
    expect(clock.waiting).toBe(1);
    await task.stop();
    expect(clock.waiting).toBe(0);
  });

  it('a period asked before each wait: a loop with nothing to do sleeps long, and wake() ends that sleep', async () => {
    const clock = new FakeClock();
    let busy = false;
    let runs = 0;
    const task = every(
      () => (busy ? 100 : 60_000),
      () => {
        runs++;
      },
      clock,
    );
    task.start();
    await clock.advanceBy(10_000, 100);
    expect(runs).toBe(0); // idle: no run, no wake-up, for 10 s
    busy = true;
    task.wake(); // the wait under way ends; the next is the busy period
    await clock.advanceBy(1_000, 100);
    expect(runs).toBeGreaterThanOrEqual(9);
    await task.stop();
    expect(clock.waiting).toBe(0);
  });

  it('periods of a second or more end on whole seconds of the clock, shorter ones on tenths: loops wake together', () => {
    expect(untilAligned(1000, 0)).toBe(1000);
    expect(untilAligned(1000, 1_234)).toBe(766); // to 2 s, not 2.234 s
    expect(untilAligned(1000, 1_700)).toBe(1_300); // to 3 s: never under half a grain
    expect(untilAligned(2000, 5_020)).toBe(1_980);
    expect(untilAligned(100, 1_234)).toBe(66);
    expect(untilAligned(5, 1_234)).toBe(5); // too short to align
  });

  it('a stop() during a run ends the loop when the run does, without waiting one more period', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const task = every(
      60_000,
      async () => {
        runs++;
        await clock.sleep(10);
      },
      clock,
    );
    task.start();
    await clock.advanceBy(60_000, 1_000);
    expect(runs).toBe(1); // under way, waiting on the clock
    let stopped = false;
    const stopping = task.stop().then(() => (stopped = true));
    await clock.advanceBy(10, 5);
    await settle();
    expect(stopped).toBe(true);
    await stopping;
    expect(clock.waiting).toBe(0);
  });
});
