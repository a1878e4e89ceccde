import { describe, expect, it } from 'vitest';
import { PeriodCalendar } from '../../src/numbers/period';
import { NumberScheme } from '../../src/numbers/scheme';
import { NumberSettingsError, NumberTemplate } from '../../src/numbers/template';
import { timeZone } from '../../src/numbers/zone';

const iso = (ms: number) => new Date(ms).toISOString();
const at = (text: string) => Date.parse(text);

function refusal(fn: () => unknown): NumberSettingsError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(NumberSettingsError);
    return err as NumberSettingsError;
  }
  throw new Error('not refused');
}

describe('templates', () => {
  it('formats and decodes every token, the sequence zero-padded', () => {
    const t = NumberTemplate.parse('INV{yyyy}{MM}{dd}-{seq:6}');
    expect(t.reset).toBe('daily');
    expect(t.capacity).toBe(999_999n);
    const date = { year: 2026, month: 11, day: 28, hour: 0 };
    expect(t.formatter({ date })(123n)).toBe('INV20261128-000123');
    expect(t.formatter({ date })(4)).toBe('INV20261128-000004');
    expect(t.decode('INV20261128-000123')).toEqual({ fields: { year: 2026, month: 11, day: 28 }, seq: 123n });
    expect(t.decode('INV20261128-00012')).toBeUndefined();
    expect(t.decode('INX20261128-000123')).toBeUndefined();
    expect(t.decode('INV20261128-000000')).toBeUndefined();
    const short = NumberTemplate.parse('ORD{yy}{MM}{dd}{seq:6}');
    expect(short.formatter({ date })(4n)).toBe('ORD261128000004');
    expect(NumberTemplate.parse('SH{yyyy}{MM}{dd}{HH}/{seq:3}').reset).toBe('hourly');
    expect(NumberTemplate.parse('T-{seq:18}').capacity).toBe(10n ** 18n - 1n);
    expect(NumberTemplate.parse('T-{seq:4}').reset).toBe('never');
  });

  it('refuses, naming the field: unknown tokens, no or two {seq}, widths, bad literals, finer tokens, missing fields', () => {
    const cases: [string, string | undefined, string, RegExp][] = [
      ['INV{yyyy}{ww}{seq:4}', undefined, 'format', /unknown token \{ww\}/],
      ['INV{yyyy}', undefined, 'format', /needs one \{seq:N\}/],
      ['{seq:2}{seq:3}', undefined, 'format', /exactly one/],
      ['A{seq:0}', undefined, 'format', /N from 1 to 18/],
      ['A{seq:19}', undefined, 'format', /N from 1 to 18/],
      ['A B{seq:3}', undefined, 'format', /literal text/],
      ['A{seq:3', undefined, 'format', /unclosed/],
      ['{yyyy}{MM}{dd}{seq:4}', 'monthly', 'format', /finer than the monthly period \(dd\)/],
      ['{MM}{dd}{seq:4}', 'daily', 'format', /needs \{yyyy\} or \{yy\}/],
      ['{yyyy}{dd}{seq:4}', undefined, 'format', /needs \{MM\}/],
      ['{yyyy}{seq:4}', 'daily', 'format', /needs \{MM\}, \{dd\}/],
      ['{yyyy}{seq:4}', 'weekly', 'reset', /must be one of/],
    ];
    for (const [format, reset, field, message] of cases) {
      const err = refusal(() => NumberTemplate.parse(format, reset));
      expect(err.field, format).toBe(field);
      expect(err.message, format).toMatch(message);
    }
    expect(refusal(() => NumberScheme.settings({ format: 'A{seq:3}', timeZone: 'Mars/Olympus' })).field).toBe(
      'timeZone',
    );
    expect(refusal(() => NumberScheme.settings({ format: 'A{seq:3}', timeZone: '+15:00' })).field).toBe('timeZone');
    expect(refusal(() => NumberScheme.settings({ format: 'A{seq:3}', timeZone: '+08:61' })).field).toBe('timeZone');
  });

  it('fills defaults: reset from the finest token, UTC, IANA names canonical', () => {
    expect(NumberScheme.settings({ format: 'INV{yyyy}{MM}{seq:5}' })).toEqual({
      format: 'INV{yyyy}{MM}{seq:5}',
      reset: 'monthly',
      timeZone: 'UTC',
    });
    expect(NumberScheme.settings({ format: 'A{yyyy}{seq:5}', reset: 'yearly', timeZone: '-02:33' })).toEqual({
      format: 'A{yyyy}{seq:5}',
      reset: 'yearly',
      timeZone: '-02:33',
    });
    expect(refusal(() => NumberScheme.settings({ format: 'A{yyyy}{seq:5}', reset: 'never' })).message).toMatch(
      /finer than the never period/,
    );
  });
});

describe('periods', () => {
  it('daily in UTC: midnight, the end of February in a leap year, month and year ends', () => {
    const c = new PeriodCalendar('daily', timeZone('UTC'));
    const p = c.at(at('2028-02-28T23:59:59.999Z'));
    expect([p.id, iso(p.start), iso(p.end)]).toEqual([
      '20280228',
      '2028-02-28T00:00:00.000Z',
      '2028-02-29T00:00:00.000Z',
    ]);
    const leap = c.at(p.end);
    expect([leap.id, iso(leap.end)]).toEqual(['20280229', '2028-03-01T00:00:00.000Z']);
    expect(c.after(leap)?.id).toBe('20280301');
    expect(c.at(at('2026-12-31T23:59:59.999Z')).id).toBe('20261231');
    expect(c.at(at('2027-01-01T00:00:00.000Z')).id).toBe('20270101');
    expect(c.named('20270229')).toBeUndefined();
  });

  it("monthly and yearly in a fixed offset zone end at that zone's midnight", () => {
    const m = new PeriodCalendar('monthly', timeZone('+08:00'));
    const nov = m.at(at('2026-11-30T15:59:59.999Z'));
    expect([nov.id, iso(nov.start), iso(nov.end)]).toEqual([
      '202611',
      '2026-10-31T16:00:00.000Z',
      '2026-11-30T16:00:00.000Z',
    ]);
    const y = new PeriodCalendar('yearly', timeZone('-02:33'));
    const year = y.at(at('2027-01-01T02:32:59.999Z'));
    expect([year.id, iso(year.start), iso(year.end)]).toEqual([
      '2026',
      '2026-01-01T02:33:00.000Z',
      '2027-01-01T02:33:00.000Z',
    ]);
    expect(y.at(year.end).id).toBe('2027');
  });

  it('America/New_York: daylight-saving days have 23 and 25 hours; the repeated hour is one period, the skipped one none', () => {
    const daily = new PeriodCalendar('daily', timeZone('America/New_York'));
    const spring = daily.at(at('2026-03-08T12:00:00Z'));
    expect([spring.id, (spring.end - spring.start) / 3600_000]).toEqual(['20260308', 23]);
    expect(iso(spring.start)).toBe('2026-03-08T05:00:00.000Z');
    const fall = daily.at(at('2026-11-01T12:00:00Z'));
    expect([fall.id, (fall.end - fall.start) / 3600_000]).toEqual(['20261101', 25]);
    expect(iso(fall.end)).toBe('2026-11-02T05:00:00.000Z');

    const hourly = new PeriodCalendar('hourly', timeZone('America/New_York'));
    const one = hourly.at(at('2026-11-01T05:30:00Z'));
    expect([one.id, iso(one.start), iso(one.end)]).toEqual([
      '2026110101',
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T07:00:00.000Z',
    ]);
    const beforeSkip = hourly.at(at('2026-03-08T06:59:59Z'));
    expect([beforeSkip.id, hourly.after(beforeSkip)?.id]).toEqual(['2026030801', '2026030803']);
    expect(hourly.named('2026030802')).toBeUndefined();
    expect(hourly.named('2026030803')?.start).toBe(at('2026-03-08T07:00:00Z'));
  });

  it('never: one period for ever', () => {
    const c = new PeriodCalendar('never', timeZone('UTC'));
    expect(c.at(Date.now()).id).toBe('all');
    expect(c.after(c.at(0))).toBeUndefined();
  });
});

describe('pool cap', () => {
  it('keeps 1 % of a period ready, or one largest batch when more; at most 2^53 - 1', () => {
    const scheme = (format: string) => NumberScheme.of(NumberScheme.settings({ format }));
    expect(scheme('A{yyyy}{MM}{dd}-{seq:6}').poolCap(1000)).toBe(9_999);
    expect(scheme('A{yyyy}{MM}{dd}-{seq:6}').poolCap(20_000)).toBe(20_000);
    expect(scheme('A{yyyy}-{seq:2}').poolCap(0)).toBe(1);
    expect(scheme('A{yyyy}{MM}{dd}-{seq:12}').poolCap(1000)).toBe(9_999_999_999);
    expect(scheme('T-{seq:18}').poolCap(1000)).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('decode', () => {
  it("gives a number's period in its zone and its sequence", () => {
    const s = NumberScheme.of({ format: 'INV{yyyy}{MM}{dd}-{seq:6}', reset: 'daily', timeZone: 'Asia/Shanghai' });
    expect(s.decode('INV20261128-000123')).toEqual({
      number: 'INV20261128-000123',
      period: '20261128',
      reset: 'daily',
      timeZone: 'Asia/Shanghai',
      start: '2026-11-27T16:00:00.000Z',
      end: '2026-11-28T16:00:00.000Z',
      date: '2026-11-28',
      seq: '123',
    });
    expect(s.decode('INV20261131-000123')).toBeUndefined();
    const ny = NumberScheme.of({ format: 'H{yy}{MM}{dd}{HH}{seq:3}', reset: 'hourly', timeZone: 'America/New_York' });
    expect(ny.decode('H26110101007')?.end).toBe('2026-11-01T07:00:00.000Z');
    expect(ny.decode('H26030802007')).toBeUndefined();
  });
});
