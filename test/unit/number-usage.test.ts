import { expect, it } from 'vitest';
import { numberUsageByKind } from '../../src/ops/number-usage';
import type { NumberUsage } from '../../src/pool/period-pools';
import { entityConfig } from '../support/entity';

const numbers = { format: 'GL{yyyy}-{seq:4}', reset: 'yearly', timeZone: 'Europe/Paris' } as const;
/** 2026-12-31T23:30:00Z: already 2027 in Paris. */
const DB_NOW = Date.UTC(2026, 11, 31, 23, 30);

it("reads a gapless series' period from its ledger's counter by the database's clock, a pooled one from the takes", async () => {
  const asked: string[] = [];
  const ledger = {
    now: () => Promise.resolve(DB_NOW),
    counter: (key: string, period: string) => {
      asked.push(`${key} ${period}`);
      return Promise.resolve(42n);
    },
  };
  const pooled = { usage: () => Promise.resolve({ used: 7n } as NumberUsage) };
  const usage = numberUsageByKind(pooled, ledger);

  const gapless = await usage.usage(entityConfig({ key: 'invoices', numbers, gapless: true }));
  expect(asked).toEqual(['invoices 2027']);
  expect(gapless).toMatchObject({
    now: DB_NOW,
    period: { id: '2027' },
    used: 42n,
    ready: 0,
    capacity: 9999n,
    digits: 4,
    timeZone: 'Europe/Paris',
  });
  expect((await usage.usage(entityConfig({ key: 'orders', numbers }))).used).toBe(7n);
  expect(asked).toHaveLength(1);
});
