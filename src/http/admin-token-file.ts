import { chmod, link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { ConfigError } from '../errors';
import { SERVICE_TOKEN_MIN_LENGTH } from './settings';

/**
 * Where the embedded service keeps its admin token when IDPOOL_ADMIN_TOKEN is unset: beside its SQLite file, so a
 * noted token survives a restart; 0600, as whoever reads it may change every entity.
 */
export function adminTokenFileBeside(sqlitePath: string): string {
  const path = resolve(sqlitePath);
  return join(dirname(path), `${basename(path)}.admin-token`);
}

/**
 * The token in `path`, or `generated` written there first: through a file of this process linked into place, so of
 * two processes starting at once on one SQLite file exactly one token is kept. A file others may read becomes 0600.
 */
export async function keptAdminToken(path: string, generated: string): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${generated}\n`, { mode: 0o600, flag: 'w' });
  try {
    await link(temp, path);
    return generated;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(temp);
  }
  if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
  const kept = (await readFile(path, 'utf8')).trim();
  if (kept.length < SERVICE_TOKEN_MIN_LENGTH || !/^[\x21-\x7e]+$/.test(kept))
    throw new ConfigError(
      'IDPOOL_ADMIN_TOKEN',
      `unset, and ${path} holds no valid token (at least ${SERVICE_TOKEN_MIN_LENGTH} printable characters without spaces): fix or remove the file`,
    );
  return kept;
}
