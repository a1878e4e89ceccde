import { describe, expect, it } from 'vitest';
import { RateLimitedError } from '../../src/errors';
import { MemoryEntityRateLimit } from '../../src/pool/rate-limit';
import type { EntityConfig } from '../../src/entities/entity';
import { SnowflakeTaker } from '../../src/take/snowflake-taker';
import { TakeService } from '../../src/take/take-service';
import { FakeClock } from '../support/clock';

/** A maker that hands out 1, 2, 3, … and records each run's count; a rate limit on a fake clock that records each admit. */
function setup(options: { failMake?: Error } = {}) {
  const clock = new FakeClock();
  const memory = new MemoryEntityRateLimit(clock);
  const admits: number[] = [];
  const runs: number[] = [];
  let next = 1;
  const taker = new SnowflakeTaker({
    rate: {
      admit: (entityKey, count, max) => {
        admits.push(count);
        return memory.admit(entityKey, count, max);
      },
    },
    make: async (_key, count) => {
      if (options.failMake) throw options.failMake;
      runs.push(count);
      return Array.from({ length: count }, () => String(next++));
    },
  });
  const service = new TakeService({ takers: { snowflake: taker }, events: { served: () => undefined } });
  const takes = {
    take: async (entity: Pick<EntityConfig, 'key' | 'maxSizePerSecond'>, count: number) =>
      (await service.take({ ...entity, mode: 'snowflake' } as EntityConfig, count)).toArray(),
  };
  return { takes, admits, runs };
}

const settle = <T>(p: Promise<T>) =>
  p.then(
    (v) => v,
    (err: unknown) => err,
  );

describe('the snowflake take', () => {
  it('takes of one entity in one turn are one admit and one generator run for their sum, handed out in arrival order', async () => {
    const { takes, admits, runs } = setup();
    const entity = { key: 'orders', maxSizePerSecond: 0 };
    const counts = [1, 3, 2, 5, 1];
    const answers = await Promise.all(counts.map((n) => takes.take(entity, n)));
    expect(admits).toEqual([12]);
    expect(runs).toEqual([12]);
    expect(answers).toEqual([['1'], ['2', '3', '4'], ['5', '6'], ['7', '8', '9', '10', '11'], ['12']]);
  });

  it('each entity has its own group', async () => {
    const { takes, runs } = setup();
    await Promise.all([
      takes.take({ key: 'a', maxSizePerSecond: 0 }, 2),
      takes.take({ key: 'b', maxSizePerSecond: 0 }, 3),
      takes.take({ key: 'a', maxSizePerSecond: 0 }, 4),
    ]);
    expect(runs).toEqual([6, 3]);
  });

  it('a sum over the per-second limit is admitted request by request, in arrival order: the limit stays exact', async () => {
    const { takes, admits } = setup();
    const entity = { key: 'orders', maxSizePerSecond: 10 };
    const outcomes = await Promise.all([4, 4, 4, 1, 2].map((n) => settle(takes.take(entity, n))));
    expect(admits).toEqual([15, 4, 4, 4, 1, 2]);
    // 4 + 4 fit, the third 4 does not, 1 does (9), 2 does not (11).
    expect(outcomes.map((o) => (o instanceof RateLimitedError ? 429 : (o as string[]).length))).toEqual([
      4, 4, 429, 1, 429,
    ]);
  });

  it('a generator failure fails every request of the group, and the next turn starts afresh', async () => {
    const failure = new Error('no worker lease');
    const { takes } = setup({ failMake: failure });
    const entity = { key: 'orders', maxSizePerSecond: 0 };
    const outcomes = await Promise.all([1, 2].map((n) => settle(takes.take(entity, n))));
    expect(outcomes).toEqual([failure, failure]);
  });

  it('a group closes at 16,000 ids; the next one follows it', async () => {
    const { takes, runs } = setup();
    const entity = { key: 'orders', maxSizePerSecond: 0 };
    const answers = await Promise.all(Array.from({ length: 20 }, () => takes.take(entity, 1000)));
    expect(runs).toEqual([16_000, 4_000]);
    const flat = answers.flat().map(Number);
    expect(flat).toEqual(Array.from({ length: 20_000 }, (_, i) => i + 1));
  });
});
