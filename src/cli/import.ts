import { closeSync, constants, fchmodSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { parseJson } from '../client/transport';
import type { AdminApi } from './admin-api';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, oneLine } from './errors';

export interface ImportOptions {
  /** A JSON-lines file: one `POST /admin/apps` body per line; blank lines are skipped. */
  file: string;
  /** Where the secrets go, one `{"key","secret"}` line each; must not exist yet. */
  secretsPath: string;
  concurrency: number;
}

export interface ImportFailure {
  line: number;
  error: string;
  exitCode: typeof EXIT_FAILURE | typeof EXIT_USAGE;
}

/** Registers each line through the admin API, `concurrency` at a time, each secret written at once: a stopped run loses none. */
export async function importEntities(
  api: Pick<AdminApi, 'post'>,
  o: ImportOptions,
  onFailure: (f: ImportFailure) => void,
) {
  const lines = readLines(o.file);
  const fd = createSecretsFile(o.secretsPath);
  let registered = 0;
  const failures: ImportFailure[] = [];
  /** Set when the service could not be reached: the run stops there. */
  let unreachable: CliError | undefined;
  const fail = (line: number, error: string, exitCode: ImportFailure['exitCode']) => {
    const f = { line, error: oneLine(error), exitCode };
    failures.push(f);
    onFailure(f);
  };
  let next = 0;
  // A service that cannot be reached fails every line the same way: stop at the first.
  const worker = async () => {
    while (next < lines.length && !unreachable) {
      const line = lines[next++];
      const body = parseLine(line.body);
      if (typeof body === 'string') {
        fail(line.number, body, EXIT_USAGE);
        continue;
      }
      try {
        const created = await api.post<{ key: string; secret: string }>('/admin/apps', body);
        writeSync(fd, `${JSON.stringify({ key: created.key, secret: created.secret })}\n`);
        registered++;
      } catch (err) {
        if (!(err instanceof CliError)) throw err;
        if (err.unreachable) unreachable ??= err;
        else fail(line.number, err.message, err.exitCode);
      }
    }
  };
  try {
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
  // 1 if any line failed at run time (a conflict, the service), else 2 (bad lines only).
  const exitCode: typeof EXIT_OK | ImportFailure['exitCode'] =
    failures.length === 0 ? EXIT_OK : failures.some((f) => f.exitCode === EXIT_FAILURE) ? EXIT_FAILURE : EXIT_USAGE;
  return { lines: lines.length, registered, failures, exitCode };
}

/** What a failed file operation says: its code (ENOENT, EACCES), else its message. */
const fsError = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/** The non-blank lines of the import file, each with its 1-based number; a file that cannot be read is a usage error. */
function readLines(file: string) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(EXIT_USAGE, `cannot read ${file}: ${fsError(err)}`);
  }
  return text
    .split(/\r?\n/)
    .map((body, i) => ({ number: i + 1, body }))
    .filter((l) => l.body.trim() !== '');
}

/** Opens a new secrets file, the only copy: O_EXCL refuses to overwrite; 0600 before anything is written (umask can only narrow it). */
export function createSecretsFile(path: string): number {
  try {
    const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    fchmodSync(fd, 0o600);
    return fd;
  } catch (err) {
    const why = fsError(err);
    throw new CliError(
      EXIT_USAGE,
      why === 'EEXIST'
        ? `${path} exists; secrets are never overwritten, choose a new --secrets path`
        : `cannot create ${path}: ${why}`,
    );
  }
}

/** The line's JSON object, or why it is not one. */
function parseLine(text: string): object | string {
  const body = parseJson(text);
  if (body === undefined) return 'not valid JSON';
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return 'not a JSON object like {"key": "orders"}';
  return body;
}
