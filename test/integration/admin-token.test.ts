import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runToExit, startInstance } from '../support/processes';

/** `GET /admin/apps` with `token`: its status. */
async function adminStatus(url: string, token: string): Promise<number> {
  return (await fetch(`${url}/admin/apps`, { headers: { authorization: `Bearer ${token}` } })).status;
}

describe('the embedded admin token is kept beside the SQLite file, readable by its owner only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-admin-token-'));
  const db = `sqlite:${join(dir, 'idpool.db')}`;
  const file = join(dir, 'idpool.db.admin-token');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('generated once (0600), the same after a restart, and only its path printed', async () => {
    const first = await startInstance({ IDPOOL_DATABASE_URL: db, IDPOOL_ADMIN_TOKEN: '' });
    const token = readFileSync(file, 'utf8').trim();
    try {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(await adminStatus(first.url, token)).toBe(200);
      expect(first.output()).toContain(`the admin token is kept in ${file}`);
      expect(first.output()).toContain(`"adminTokenFile":"${file}"`);
      expect(first.output()).not.toContain(token);
    } finally {
      await first.stop();
    }
    const second = await startInstance({ IDPOOL_DATABASE_URL: db, IDPOOL_ADMIN_TOKEN: '' });
    try {
      expect(readFileSync(file, 'utf8').trim()).toBe(token);
      expect(await adminStatus(second.url, token)).toBe(200);
      expect(second.output()).not.toContain(token);
    } finally {
      await second.stop();
    }
  });

  it('a token the user gives wins and writes no file; a file others could read is narrowed to 0600', async () => {
    const given = 'given-admin-token-0123456789abcdefgh';
    const other = join(dir, 'given');
    const instance = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(other, 'idpool.db')}`,
      IDPOOL_ADMIN_TOKEN: given,
    });
    try {
      expect(await adminStatus(instance.url, given)).toBe(200);
      expect(existsSync(join(other, 'idpool.db.admin-token'))).toBe(false);
    } finally {
      await instance.stop();
    }
    const loose = join(dir, 'loose');
    rmSync(loose, { recursive: true, force: true });
    const started = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(loose, 'idpool.db')}`,
      IDPOOL_ADMIN_TOKEN: '',
    });
    await started.stop();
    const looseFile = join(loose, 'idpool.db.admin-token');
    writeFileSync(looseFile, 'kept-by-hand-0123456789abcdefghijklmnop\n', { mode: 0o644 });
    const again = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(loose, 'idpool.db')}`,
      IDPOOL_ADMIN_TOKEN: '',
    });
    try {
      expect(statSync(looseFile).mode & 0o777).toBe(0o600);
      expect(await adminStatus(again.url, 'kept-by-hand-0123456789abcdefghijklmnop')).toBe(200);
    } finally {
      await again.stop();
    }
  });

  it('a file without a valid token is a configuration error naming it (exit 2)', async () => {
    const bad = join(dir, 'bad');
    const started = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(bad, 'idpool.db')}`,
      IDPOOL_ADMIN_TOKEN: '',
    });
    await started.stop();
    writeFileSync(join(bad, 'idpool.db.admin-token'), 'short\n', { mode: 0o600 });
    const run = await runToExit({ IDPOOL_DATABASE_URL: `sqlite:${join(bad, 'idpool.db')}`, IDPOOL_ADMIN_TOKEN: '' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^idpool: invalid configuration: IDPOOL_ADMIN_TOKEN: unset, and \S+idpool\.db\.admin-token holds no valid token/,
    );
  });
});
