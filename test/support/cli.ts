import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { BUILT_CLI, ensureBuilt } from './build';

const ROOT = join(__dirname, '..', '..');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `idpool …` (the tree's build: build.ts) as its own process, as a user
 * would (IDPOOL_URL and IDPOOL_ADMIN_TOKEN unset unless `env` sets them).
 */
export async function idpool(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  await ensureBuilt();
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [BUILT_CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, IDPOOL_URL: undefined, IDPOOL_ADMIN_TOKEN: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += String(d)));
    proc.stderr.on('data', (d) => (stderr += String(d)));
    proc.once('error', reject);
    proc.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A one-line error on stderr, nothing on stdout. */
export function expectOneLineError(run: CliRun, code: number, pattern: RegExp) {
  expect(run.code, `${run.stdout}${run.stderr}`).toBe(code);
  expect(run.stdout).toBe('');
  expect(run.stderr.endsWith('\n')).toBe(true);
  expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(run.stderr).toMatch(/^idpool: /);
  expect(run.stderr).toMatch(pattern);
}

/** The JSON a successful `--json` run printed. */
export function json(run: CliRun) {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}
