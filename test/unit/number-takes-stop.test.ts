import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger';
import { Demand } from '../../src/pool/demand';
import { type RedisNumberTakesOptions, RedisNumberTakes } from '../../src/pool/number-takes';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';
import { sleep, waitFor } from '../support/wait';

describe('business numbers on Redis: stopping', () => {
  it('stop() waits for the refill tick under way, and no refill starts after it (the connections close next)', async () => {
    const clock = new FakeClock();
    const configs = new Map(['first', 'second'].map((key) => [key, entityConfig({ key })]));
    // The first refill's lock is held until the test lets it go; a lock refused ends a refill before Redis is read.
    const asked: string[] = [];
    let letGo: () => void = () => undefined;
    const lock: RedisNumberTakesOptions['lock'] = {
      async acquire(key) {
        asked.push(key);
        if (asked.length === 1) await new Promise<void>((resolve) => (letGo = resolve));
        return null;
      },
    };
    const takes = new RedisNumberTakes({
      // Never reached: every refill ends at its refused lock.
      store: {} as never,
      counter: {} as never,
      lock,
      entities: { get: (key) => configs.get(key), numberKeys: () => [...configs.keys()] },
      demand: new Demand({ clock, horizonSeconds: 60 }),
      events: {
        rateLimited: () => undefined,
        exhausted: () => undefined,
        periodExhausted: () => undefined,
        refused: () => undefined,
      },
      clock,
      log: silentLogger,
      intervalMs: 100,
    });
    takes.start();
    await waitFor(() => asked.length === 1, { message: 'the tick to reach the first entity' });

    let stopped = false;
    const stopping = takes.stop().then(() => void (stopped = true));
    await sleep(20);
    expect(stopped).toBe(false);
    letGo();
    await stopping;
    // Long enough for a tick that went on, or a timer left set, to ask for the next lock.
    await sleep(150);
    expect(asked).toEqual(['first']);
  });
});
