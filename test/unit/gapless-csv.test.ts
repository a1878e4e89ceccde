import { describe, expect, it } from 'vitest';
import { ledgerCsv } from '../../src/gapless/csv';

const row = (fields: { reference?: string | null; reason?: string | null; status?: string }) => ({
  number: 'INV20261128-000001',
  period: '20261128',
  seq: '1',
  issuedAt: '2026-11-28T10:00:00.000Z',
  status: fields.status ?? 'issued',
  reference: fields.reference ?? null,
  reason: fields.reason ?? null,
});

describe('the ledger as CSV', () => {
  it('writes the header once, CRLF lines, empty fields for null', () => {
    expect(ledgerCsv([row({})], true)).toBe(
      'number,period,seq,issued_at,status,reference,reason\r\nINV20261128-000001,20261128,1,2026-11-28T10:00:00.000Z,issued,,\r\n',
    );
    expect(ledgerCsv([row({ reference: 'order-7' })], false)).toBe(
      'INV20261128-000001,20261128,1,2026-11-28T10:00:00.000Z,issued,order-7,\r\n',
    );
  });

  it('quotes commas, quotes and line breaks, and keeps a formula from running', () => {
    const line = ledgerCsv([row({ status: 'void', reference: 'a,"b"', reason: 'two\nlines' })], false);
    expect(line).toBe('INV20261128-000001,20261128,1,2026-11-28T10:00:00.000Z,void,"a,""b""","two\nlines"\r\n');
    for (const formula of ['=1+1', '+1', '-1', '@SUM(A1)'])
      expect(ledgerCsv([row({ reference: formula })], false)).toContain(`,'${formula},`);
  });
});
