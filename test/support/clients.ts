/**
 * The Java, Python and Go clients' check programs (clients/LANG; the same
 * modes in all three: unique, failover, errors, bench, spent) and their own
 * tests against local fake instances: built once into a directory, then run
 * as processes. Used by test/integration/clients.test.ts
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
  /** The language's own tests against local fake instances (no service): command, arguments, directory. */
  unitTests: [string, string[], string];
}

/** Go builds and tests from the standard library only: nothing may be fetched. */
const GO_ENV = { GOFLAGS: '-mod=mod', GOPROXY: 'off', GOTOOLCHAIN: 'local' };

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
      env: { ...process.env, ...GO_ENV },
    }),
  ]);
  return [
    {
      name: 'java',
      command: (mode) => ['java', [...jvm, '-cp', classes, 'dev.idpool.client.ClientCheck', mode]],
      unitTests: ['java', [...jvm, '-cp', classes, 'dev.idpool.client.EntityRefusalsCheck'], dir],
    },
    {
      name: 'python',
      command: (mode) => ['python3', [join(CLIENTS, 'python', 'tests', 'check.py'), mode]],
      env: { PYTHONPATH: join(CLIENTS, 'python', 'src'), PYTHONDONTWRITEBYTECODE: '1' },
      unitTests: ['python3', ['-m', 'unittest', 'discover', '-s', 'tests'], join(CLIENTS, 'python')],
    },
    {
      name: 'go',
      command: (mode) => [goBinary, [mode]],
      env: GO_ENV,
      unitTests: ['go', ['test', '-count=1', '.'], join(CLIENTS, 'go')],
    },
  ];
}

/** Runs `language`'s own tests; resolves with their output, rejects with it when they fail. */
export async function runUnitTests(language: ClientLanguage): Promise<string> {
  const [command, args, cwd] = language.unitTests;
  try {
    const { stdout, stderr } = await execFileAsync(command, args, {
      cwd,
      env: { ...process.env, ...language.env },
    });
    return stdout + stderr;
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`${language.name}'s own tests failed:\n${stdout}${stderr}`, { cause: err });
  }
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
