import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { describeWithServices } from '../support/describe-with-services';
import { RULES_FILE, RULES_TEST_FILE, readRules, selectorsOf } from '../support/promql';

interface RulesTests {
  rule_files: string[];
  tests: {
    name: string;
    alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[];
    promql_expr_test?: { expr: string }[];
  }[];
}

const rules = readRules();
const alerts = rules.filter((r) => r.alert !== undefined);
const records = rules.filter((r) => r.record !== undefined);
const unitTests = (parse(readFileSync(RULES_TEST_FILE, 'utf8')) as RulesTests).tests;

const run = (...args: string[]) => spawnSync('promtool', args, { cwd: dirname(RULES_FILE), encoding: 'utf8' });

describeWithServices('deploy/prometheus/idpool-rules.yml under promtool', { promtool: true }, () => {
  it('passes promtool check rules', () => {
    const result = run('check', 'rules', RULES_FILE);
    expect(`${result.stdout}${result.stderr}`).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(result.status).toBe(0);
  });

  it('passes its unit tests (promtool test rules idpool-rules.test.yml)', () => {
    const result = run('test', 'rules', RULES_TEST_FILE);
    expect(`${result.stdout}${result.stderr}`, `${result.stdout}${result.stderr}`).toMatch(/SUCCESS/);
    expect(result.status).toBe(0);
  });
});

describe('deploy/prometheus/idpool-rules.yml', () => {
  it('is what scripts/prometheus-rules.js writes from the alarm table (src/ops/alarm-table.ts)', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/prometheus-rules.js', '--check'], {
      cwd: join(__dirname, '..', '..'),
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
  });

  it('has the alerts the operators need, each tested firing and not firing', () => {
    expect(alerts.map((a) => a.alert).sort()).toEqual(
      [
        'IdpoolClockSkew',
        'IdpoolDatabaseBehind',
        'IdpoolDependencyUnavailable',
        'IdpoolHttp5xxRate',
        'IdpoolInstancesDisagreeOnEpoch',
        'IdpoolInstancesDropped',
        'IdpoolInt63LimitForecast',
        'IdpoolJsSafeLimitForecast',
        'IdpoolLeaseLost',
        'IdpoolNumberPeriodExhaustedForecast',
        'IdpoolNumberPeriodFull',
        'IdpoolOpsSamplingStale',
        'IdpoolPoolDryForecast',
        'IdpoolPoolExhausted',
        'IdpoolPoolLow',
        'IdpoolRefillFailing',
        'IdpoolSnowflakeJsSafeLimitForecast',
        'IdpoolSnowflakeTimeExhaustedForecast',
        'IdpoolWorkerRangeNearlyFull',
      ].sort(),
    );
    const cases = unitTests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} is tested firing`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} is tested not firing`,
      ).toBe(true);
    }
    // A case naming an alert that does not exist would pass vacuously (nothing fires).
    for (const c of cases)
      expect(
        alerts.map((a) => a.alert),
        `test case for ${c.alertname}`,
      ).toContain(c.alertname);
  });

  it('tests every recording rule', () => {
    const tested = new Set(
      unitTests.flatMap((t) => t.promql_expr_test ?? []).flatMap((t) => selectorsOf(t.expr).map((s) => s.metric)),
    );
    for (const { record } of records) expect(tested, `recording rule ${record}`).toContain(record);
  });

  it('labels every alert with a severity and describes it, naming the entity where there is one', () => {
    for (const a of alerts) {
      expect(['warning', 'critical'], `${a.alert} severity`).toContain(a.labels?.severity);
      expect(a.annotations?.summary, `${a.alert} summary`).toBeTruthy();
      expect(a.annotations?.description, `${a.alert} description`).toBeTruthy();
      // Alerts kept per entity say which one in both annotations.
      if (/by \([^)]*\bentity\b/.test(a.expr)) {
        expect(a.annotations!.summary, `${a.alert} summary`).toContain('{{ $labels.entity }}');
        expect(a.annotations!.description, `${a.alert} description`).toContain('{{ $labels.entity }}');
      }
    }
  });

  it('names recording rules level:metric:operations over idpool metrics', () => {
    for (const { record, expr } of records) {
      expect(record, 'recording rule name').toMatch(/^[a-z_]+:idpool_[a-z0-9_]+:[a-z0-9_]+$/);
      expect(selectorsOf(expr).length, `${record} reads a metric`).toBeGreaterThan(0);
    }
  });
});
