import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

// The dashboard's queries are checked against a live /metrics and a real
// Prometheus elsewhere (monitoring-metrics, prometheus-live); here only that
// the committed JSON is what its generator writes.
it('deploy/grafana/idpool-dashboard.json is what scripts/grafana-dashboard.js writes', () => {
  const result = spawnSync(process.execPath, ['scripts/grafana-dashboard.js', '--check'], {
    cwd: join(__dirname, '..', '..'),
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
});
