import { describe, expect, it } from 'vitest';
import { fields, table } from '../../src/cli/format';

describe("the CLI's plain-text output", () => {
  it('flattens nested objects and lists of objects; a list of plain values is one comma-separated cell', () => {
    const text = fields({
      key: 'orders',
      pool: { size: 1000, lowWatermarkPercent: 20 },
      compat: ['leaf', 'tinyid'],
      secrets: [
        { id: 'a1', expiresAt: null },
        { id: 'b2', expiresAt: '2026-12-01T00:00:00.000Z' },
      ],
      firstId: null,
    });
    expect(text).toBe(
      [
        'key                       orders',
        'pool.size                 1000',
        'pool.lowWatermarkPercent  20',
        'compat                    leaf,tinyid',
        'secrets.0.id              a1',
        'secrets.0.expiresAt       -',
        'secrets.1.id              b2',
        'secrets.1.expiresAt       2026-12-01T00:00:00.000Z',
        'firstId                   -',
        '',
      ].join('\n'),
    );
    expect(text).not.toMatch(/object Object/);
  });

  it('pads every column but the last of a table', () => {
    expect(
      table(
        ['key', 'mode'],
        [
          ['orders', 'monotonic'],
          ['u', 'trend'],
        ],
      ),
    ).toBe('key     mode\norders  monotonic\nu       trend\n');
  });
});
