import { describe, expect, it } from 'vitest';
import { Snowflake } from '../../src/snowflake/snowflake';
import { FakeClock } from '../support/clock';

describe('snowflake batches (the HTTP batch path)', () => {
  it('takeStrings writes exactly the ids take makes, across time units, 10^8 digit carries and layouts', async () => {
    const layouts = [
      undefined,
      { timestampBits: 41, workerBits: 9 },
      { timestampBits: 41, workerBits: 7, reservedBits: 3, reservedValue: 5 },
      { timeUnit: 's' as const, timestampBits: 37, workerBits: 3 },
    ];
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const layout of layouts) {
      for (let round = 0; round < 25; round++) {
        const start = Date.UTC(2026, 0, 1) + Math.floor(random() * 5 * 365 * 86_400_000);
        const a = new Snowflake({ workerId: 3, layout, clock: new FakeClock({ now: start, sleep: 'advance' }) });
        const b = new Snowflake({ workerId: 3, layout, clock: new FakeClock({ now: start, sleep: 'advance' }) });
        const count = 1 + Math.floor(random() * 5000);
        const strings = await a.takeStrings('e', count);
        const bigints = await b.take('e', count);
        expect(strings).toEqual(bigints.map(String));
        expect(bigints.every((id, i) => i === 0 || id > bigints[i - 1])).toBe(true);
      }
    }
  });

  it('a run whose last eight digits carry into the ninth is written whole', async () => {
    // Find a start whose first id ends in 99,999,000 or more (default layout: each ms adds 2^22).
    const at = Date.UTC(2026, 2, 1);
    const first = (
      await new Snowflake({ workerId: 3, clock: new FakeClock({ now: at, sleep: 'advance' }) }).take('e', 1)
    )[0];
    const r0 = Number(first % 100_000_000n);
    let d = 0;
    while ((r0 + d * 2 ** 22) % 100_000_000 < 99_999_000) d++;
    const start = at + d;
    const strings = await new Snowflake({
      workerId: 3,
      clock: new FakeClock({ now: start, sleep: 'advance' }),
    }).takeStrings('e', 3000);
    const bigints = await new Snowflake({ workerId: 3, clock: new FakeClock({ now: start, sleep: 'advance' }) }).take(
      'e',
      3000,
    );
    expect(Number(bigints[0] % 100_000_000n)).toBeGreaterThanOrEqual(99_999_000);
    expect(strings).toEqual(bigints.map(String));
  });

  it('concurrent takes that must wait line up: each waits once per unit it needs, not once per wake-up of every waiter', async () => {
    // 41 ms bits / 10 worker / 11 sequence: 2,048 ids per ms; the clock moves only when a take sleeps.
    const clock = new FakeClock({ now: Date.UTC(2026, 5, 1), sleep: 'advance' });
    const sf = new Snowflake({ workerId: 1, clock });
    const answers = await Promise.all(Array.from({ length: 64 }, () => sf.takeStrings('e', 1000)));
    const all = answers.flat();
    expect(new Set(all).size).toBe(64_000);
    for (const ids of answers)
      for (let i = 1; i < ids.length; i++) expect(BigInt(ids[i]) > BigInt(ids[i - 1])).toBe(true);
    // 64,000 ids need 32 units of 2,048: 31 waits for the next ms, whoever makes them.
    expect(clock.sleeps.length).toBe(Math.ceil(64_000 / 2048) - 1);
  });
});
