import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/**
 * A temporary directory for the suite this is called in (`prefix` names it
 * under the system's tmp): made before its tests, removed after them.
 */
export function suiteDir(prefix: string): { file(name: string): string; sqliteUrl(name: string): string } {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return { file: (name) => join(dir, name), sqliteUrl: (name) => `sqlite:${join(dir, name)}` };
}
