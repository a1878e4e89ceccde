/**
 * The Java, Python and Go clients' check programs (clients/LANG; the same
 * modes in all three: unique, failover, errors, bench): built once into a
 * directory, then run as processes. Used by test/integration/clients.test.ts
 * and bench/clients.bench.ts.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const CLIENTS = join(__dirname, '..', '..', 'clients');

/** One language's check program, built. */
export interface ClientLanguage {
  name: 'java' | 'python' | 'go';
  command: (mode: string) => [string, string[]];
  env?: Record<string, string>;
}

/** A check program running. */
export interface ClientRun {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Runs a build step; rejects with its output when it fails. */
async function build(
  what: string,
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
) {
  try {
    await execFileAsync(command, args, options);
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`${what} failed:\n${stdout}${stderr}`, { cause: err });
  }
}

/**
 * Builds the Java and Go programs into `dir` (both at once); Python runs from
 * source. `jvm` are options of the JVM that runs the Java program (the tests
 * run short ones: C1 only starts faster).
 */
export async function buildClientLanguages(dir: string, jvm: string[] = []): Promise<ClientLanguage[]> {
  const javaRoot = join(CLIENTS, 'java', 'src');
  const javaSources = readdirSync(javaRoot, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.java'))
    .map((f) => join(javaRoot, f));
  const classes = join(dir, 'classes');
  const goBinary = join(dir, 'idpoolcheck');
  // C1 only and the serial collector: javac's own run is short, so this halves its CPU time.
  const fastJavac = ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC'];
  await Promise.all([
    build('javac', 'javac', [...fastJavac, '--release', '11', '-Xlint:all', '-Werror', '-d', classes, ...javaSources]),
    build('go build', 'go', ['build', '-o', goBinary, './cmd/idpoolcheck'], {
      cwd: join(CLIENTS, 'go'),
      // Standard library only: nothing may be fetched.
      env: { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GOTOOLCHAIN: 'local' },
    }),
  ]);
  return [
    { name: 'java', command: (mode) => ['java', [...jvm, '-cp', classes, 'dev.idpool.client.ClientCheck', mode]] },
    {
      name: 'python',
      command: (mode) => ['python3', [join(CLIENTS, 'python', 'tests', 'check.py'), mode]],
      env: { PYTHONPATH: join(CLIENTS, 'python', 'src'), PYTHONDONTWRITEBYTECODE: '1' },
    },
    { name: 'go', command: (mode) => [goBinary, [mode]] },
  ];
}

/** Starts `language`'s check program in `mode`; its stdin stays open for the failover mode's go-on line. */
export function runClient(language: ClientLanguage, mode: string, env: Record<string, string>): ClientRun {
  const [command, args] = language.command(mode);
  const proc = spawn(command, args, { env: { ...process.env, ...language.env, ...env }, stdio: 'pipe' });
  let out = '';
  proc.stdout.on('data', (d) => (out += String(d)));
  proc.stderr.on('data', (d) => (out += String(d)));
  const exited = new Promise<number | null>((resolve) => proc.once('close', (code) => resolve(code)));
  return { proc, output: () => out, exited };
}
