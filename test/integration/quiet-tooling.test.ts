import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');

/**
 * What a newcomer runs every day says nothing when all is well: a warning
 * printed on every run is soon read as noise, and the one that matters is
 * missed with it (docs/testing.md#quiet-installs-and-runs).
 */
describe('installs and test runs are quiet', () => {
  it('every dependency with an install script is approved or denied in package.json allowScripts (npm ci warns of none)', () => {
    // The same review `npm ci` does at its end, read-only and without installing.
    const run = spawnSync('npm', ['install-scripts', 'ls'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('No packages with unreviewed install scripts.');
    expect(run.status).toBe(0);
  });

  it('vitest runs a file without a warning (vitest.config.mts loads as a native ES module)', () => {
    const run = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', 'test/unit/schedule.test.ts'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
        // No colours, so the summary below is plain text.
        env: { ...process.env, NO_COLOR: '1', CI: '1' },
      },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/Test Files\s+1 passed/);
    expect(run.stdout).not.toMatch(/\(!\)|warn/i);
    expect(run.status).toBe(0);
  });
});
