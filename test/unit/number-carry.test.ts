/**
 * A business-number push the fence refuses (period-pools.ts `carry`): a
 * restored counter is reported as `database_behind` whether the refused
 * range stops below the fence or reaches past it, and a range refused
 * because another refiller's went first (a lock taken over) is not.
 */
import { describe, expect, it } from 'vitest';
import type { NumberEntity, PeriodSlot, PeriodState, PeriodStore } from '../../src/pool/period-pools';
import { NumberPeriods } from '../../src/pool/period-pools';
import { silentLogger } from '../../src/logger';
import type { DatabaseBehindReport } from '../../src/segment/high-water';
import { FakeNumberCounter } from '../../src/segment/fake-number-counter';
import type { SeqRange } from '../../src/segment/number-counter';
import { MemoryRefillLock } from '../../src/pool/memory-pool-store';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';

const NOON = Date.parse('2026-11-29T12:00:00Z');
const PERIOD = '20261129';
const EMPTY: PeriodSlot = { period: undefined, start: 0, end: 0, full: false, size: 0 };

/** Redis's side as the fence sees it: a push refused unless it starts above the highest sequence pushed. */
class FencedStore implements PeriodStore {
  readonly inProcess = false;
  fence = 0n;
  readonly pushed: SeqRange[] = [];
  /** Runs before a push is judged: another refiller getting there first. */
  before?: () => Promise<void>;

  constructor(private readonly clock: FakeClock) {}

  async state(): Promise<PeriodState> {
    return { now: this.clock.now(), epochCurrent: true, slots: [EMPTY, EMPTY], latest: 0, dropped: false };
  }

  async pushRange(_e: NumberEntity, _s: unknown, _p: unknown, range: SeqRange | undefined): Promise<string> {
    await this.before?.();
    this.before = undefined;
    if (!range) return 'ok';
    if (range.first <= this.fence) return 'fenced';
    this.fence = range.last;
    this.pushed.push(range);
    return 'ok';
  }

  async waiting(): Promise<string[]> {
    return [];
  }

  async issued(): Promise<bigint> {
    return this.fence;
  }

  async trim(): Promise<number> {
    return 0;
  }
}

function setUp() {
  const clock = new FakeClock({ now: NOON });
  const counter = new FakeNumberCounter();
  const store = new FencedStore(clock);
  const behind: DatabaseBehindReport[] = [];
  const periods = new NumberPeriods({
    store,
    counter,
    lock: new MemoryRefillLock(),
    events: { periodExhausted: () => undefined },
    clock,
    log: silentLogger,
    retryMs: 10,
    databaseBehind: (report) => void behind.push(report),
  });
  const entity = entityConfig({
    key: 'bills',
    step: 200,
    maxSizePerTimes: 100,
    numbers: { format: 'B{yyyy}{MM}{dd}-{seq:6}', reset: 'daily', timeZone: 'UTC' },
  });
  const fill = () => periods.fill(entity, 0, { target: 200, lowWatermark: 50, max: 1000 });
  return { counter, store, behind, fill };
}

describe('a business-number push refused by the fence', () => {
  it('a restored counter whose next range reaches past the fence: reported, the range above it pushed', async () => {
    const { store, behind, fill } = setUp();
    store.fence = 100n; // Redis pushed up to 100; the database's row went back to 0.
    await fill();
    expect(behind).toMatchObject([{ entityKey: 'bills', period: PERIOD, databaseOffset: 0n, fence: 100n }]);
    expect(store.pushed).toEqual([{ first: 201n, last: 400n }]);
  });

  it('a restored counter whose next range stops below the fence: carried past it and reported', async () => {
    const { counter, store, behind, fill } = setUp();
    store.fence = 1000n;
    await fill();
    expect(behind).toMatchObject([{ period: PERIOD, databaseOffset: 0n, fence: 1000n, carriedTo: 1000n }]);
    expect(store.pushed).toEqual([{ first: 1001n, last: 1200n }]);
    expect(await counter.peek('bills', PERIOD)).toBe(1200n);
  });

  it("another refiller's range pushed first (a lock taken over): the refused range is a gap, no alarm", async () => {
    const { counter, store, behind, fill } = setUp();
    store.before = async () => {
      const other = await counter.reserve('bills', { id: PERIOD, end: NOON + 43_200_000 }, 100, 999_999n);
      store.fence = other!.last;
    };
    await fill();
    expect(behind).toEqual([]);
    expect(store.pushed).toEqual([{ first: 301n, last: 500n }]);
  });
});
