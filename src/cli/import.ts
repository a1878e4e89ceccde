import { closeSync, constants, fchmodSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import type { AdminApi } from './admin-api';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, oneLine } from './errors';

export interface ImportOptions {
  /** A JSON-lines file: one `POST /admin/apps` body per line; blank lines are skipped. */
  file: string;
  /** Where the secrets go, one `{"key","secret"}` line each; must not exist yet. */
  secretsPath: string;
  /** Requests in flight at once. */
  concurrency: number;
}

export interface ImportFailure {
  line: number;
  error: string;
  exitCode: typeof EXIT_FAILURE | typeof EXIT_USAGE;
}

export interface ImportResult {
  lines: number;
  registered: number;
  failures: ImportFailure[];
  /** 0 when every line was registered; else 1 if any line failed at run time (conflict, service), else 2. */
  exitCode: number;
}

/**
 * Registers every line of a file through the admin API, `concurrency`
 * requests at a time, and writes each secret the moment it is known (a run
 * stopped half way loses no secret of an entity it registered). The secrets
 * file is created with mode 0600 and never overwritten: it is the only copy.
 */
export async function importApps(api: Pick<AdminApi, 'post'>, o: ImportOptions, onFailure: (f: ImportFailure) => void): Promise<ImportResult> {
  let text: string;
  try {
    text = readFileSync(o.file, 'utf8');
  } catch (err) {
    throw new CliError(EXIT_USAGE, `cannot read ${o.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const lines = text.split(/\r?\n/).map((body, i) => ({ number: i + 1, body })).filter((l) => l.body.trim() !== '');
  let fd: number;
  try {
    // O_EXCL: refuse to overwrite; 0600 before anything is written (umask can only narrow it).
    fd = openSync(o.secretsPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    fchmodSync(fd, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(EXIT_USAGE, code === 'EEXIST' ? `${o.secretsPath} exists; secrets are never overwritten, choose a new --secrets path` : `cannot create ${o.secretsPath}: ${code ?? (err as Error).message}`);
  }

  const failures: ImportFailure[] = [];
  let registered = 0;
  let unreachable: CliError | undefined;
  const fail = (line: number, error: string, exitCode: ImportFailure['exitCode']) => {
    const f = { line, error: oneLine(error), exitCode };
    failures.push(f);
    onFailure(f);
  };
  const registerLine = async (line: { number: number; body: string }) => {
    let body: unknown;
    try {
      body = JSON.parse(line.body);
    } catch {
      return fail(line.number, 'not valid JSON', EXIT_USAGE);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return fail(line.number, 'not a JSON object like {"key": "orders"}', EXIT_USAGE);
    try {
      const created = await api.post<{ key: string; secret: string }>('/admin/apps', body);
      writeSync(fd, `${JSON.stringify({ key: created.key, secret: created.secret })}\n`);
      registered++;
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      if (err.unreachable) {
        unreachable ??= err;
        return;
      }
      fail(line.number, err.message, err.exitCode);
    }
  };

  try {
    let next = 0;
    const worker = async () => {
      // A service that cannot be reached fails every line the same way: stop at the first.
      while (next < lines.length && !unreachable) await registerLine(lines[next++]);
    };
    await Promise.all(Array.from({ length: Math.max(1, o.concurrency) }, worker));
  } finally {
    closeSync(fd);
  }
  if (unreachable) {
    // Nothing registered: leave no empty secrets file behind, so the same command can simply be run again.
    if (registered === 0) unlinkSync(o.secretsPath);
    throw unreachable;
  }
  failures.sort((a, b) => a.line - b.line);
  const exitCode = failures.length === 0 ? EXIT_OK : failures.some((f) => f.exitCode === EXIT_FAILURE) ? EXIT_FAILURE : EXIT_USAGE;
  return { lines: lines.length, registered, failures, exitCode };
}
