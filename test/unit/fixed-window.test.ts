import { describe, expect, it } from 'vitest';
import { FixedWindow } from '../../src/fixed-window';

describe('FixedWindow: the one windowed counter', () => {
  it('from its first event: counts within windowMs of it, then starts over', () => {
    const w = new FixedWindow(1000);
    w.at(500).count++;
    w.at(1499).count++;
    expect(w.count).toBe(2);
    expect(w.leftAt(1499)).toBe(1);
    expect(w.at(1500).count).toBe(0);
    expect(w.leftAt(1500)).toBe(1000);
  });

  it('aligned: windows on whole multiples of windowMs, an earlier one (a clock set back) starting over too', () => {
    const w = new FixedWindow(1000, true);
    w.at(2300).count += 5;
    expect(w.leftAt(2300)).toBe(700);
    expect(w.at(2999).count).toBe(5);
    expect(w.at(3000).count).toBe(0);
    w.at(3000).count = 3;
    expect(w.at(2999).count).toBe(0);
  });
});
