import { describe, expect, it } from 'vitest';
import { every } from '../../src/schedule';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('every(): one scheduling style', () => {
  it('sub-second ticks repeat, never overlap, and stop() waits for the run under way', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let finished = 0;
    const task = every('test-tick', 10, async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      runs++;
      await sleep(25); // longer than the period: the next run must wait
      active--;
      finished++;
    });
    task.start();
    task.start(); // a second start is a no-op
    await sleep(200);
    await task.stop();
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(maxActive).toBe(1);
    expect(finished).toBe(runs);
    const after = runs;
    await sleep(60);
    expect(runs).toBe(after);
  });

  it('whole seconds run on node-cron; runNow runs at once and shares the no-overlap guard', async () => {
    let runs = 0;
    const task = every('test-cron', 1000, async () => {
      runs++;
      await sleep(50);
    });
    task.start();
    await Promise.all([task.runNow(), task.runNow()]);
    expect(runs).toBe(1);
    await sleep(2100);
    await task.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
    const after = runs;
    await sleep(1100);
    expect(runs).toBe(after);
  });

  it('a failing task does not stop the schedule', async () => {
    let runs = 0;
    const task = every('test-fail', 10, () => {
      runs++;
      throw new Error('boom');
    });
    task.start();
    await sleep(100);
    await task.stop();
    expect(runs).toBeGreaterThanOrEqual(3);
  });
});
