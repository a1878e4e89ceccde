import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILT_MAIN, ensureBuilt } from './build';
import { redisAnswers } from './redis-ping';

const ROOT = join(__dirname, '..', '..');

/**
 * The program every private Redis of the tests runs (servers, Sentinels,
 * Cluster nodes): `redis-server`, or what IDPOOL_TEST_REDIS_SERVER names
 * (the Valkey leg, scripts/test-valkey.sh: `valkey-server`, which is a
 * Sentinel with `--sentinel` as redis-server is).
 */
export const REDIS_SERVER = process.env.IDPOOL_TEST_REDIS_SERVER || 'redis-server';

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** libfaketime (Debian's `faketime`): `LD_PRELOAD` it with `FAKETIME=-10s` to start a process with its clock set back. */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

export interface Instance {
  readonly port: number;
  readonly url: string;
  readonly proc: ChildProcess;
  readonly output: () => string;
  /** SIGKILL and wait for exit. */
  kill9(): Promise<void>;
  /** SIGTERM and wait; resolves to the exit code. */
  stop(): Promise<number | null>;
}

/** The structured log lines of an instance that raised the alarm `name`. */
export function alarmLines(instance: Pick<Instance, 'output'>, name: string): Record<string, unknown>[] {
  return instance
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.alarm === name);
}

/** Resolves to the exit code once `proc` has exited (at once if it has). */
export function waitExit(proc: ChildProcess): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

/**
 * Starts the service as a real process and waits until it listens; in a
 * network namespace when `at` says so (reached at `at.host`). `entry` is
 * `'dist'`, the tree's build (`dist/src/main.js`, rebuilt first when src/
 * is newer: build.ts), another build's `main.js`, as the rolling upgrade
 * test runs the previous release, or a `.ts` script run through tsx that
 * logs `idpool listening` with its port as main.ts does.
 */
export async function startInstance(
  env: Record<string, string>,
  timeoutMs = 30_000,
  at?: { netns: string; host: string },
  entry = 'dist',
): Promise<Instance> {
  if (entry === 'dist') await ensureBuilt();
  const command =
    entry === 'dist'
      ? [process.execPath, BUILT_MAIN]
      : entry.endsWith('.js')
        ? [process.execPath, entry]
        : [process.execPath, '--import', 'tsx', entry];
  if (at) command.unshift('ip', 'netns', 'exec', at.netns);
  const proc = spawn(command[0], command.slice(1), {
    cwd: ROOT,
    env: {
      ...process.env,
      IDPOOL_PORT: '0',
      IDPOOL_LOG_LEVEL: 'info',
      IDPOOL_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d) => (out += String(d)));
  proc.stderr.on('data', (d) => (out += String(d)));
  const port = await new Promise<number>((resolve, reject) => {
    // Killed, not left behind: on a loaded machine a process that starts late
    // would go on running after its test, and load the machine more.
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`instance did not start in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = () => {
      const m = /"port":(\d+)[^\n]*"msg":"idpool listening"/.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.stdout.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    proc.stdout.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`instance exited with ${code} before listening:\n${out}`));
    });
  });
  return {
    port,
    url: `http://${at?.host ?? '127.0.0.1'}:${port}`,
    proc,
    output: () => out,
    async kill9() {
      proc.kill('SIGKILL');
      await waitExit(proc);
    },
    async stop() {
      proc.kill('SIGTERM');
      return waitExit(proc);
    },
  };
}

/**
 * Runs the service (the tree's build, as {@link startInstance}) expecting it
 * to stop by itself (bad configuration, a refused start); killed after
 * `timeoutMs`. Resolves to its exit code and output.
 */
export async function runToExit(
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  await ensureBuilt();
  const proc = spawn(process.execPath, [BUILT_MAIN], {
    cwd: ROOT,
    env: { ...process.env, IDPOOL_PORT: '0', IDPOOL_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += String(d)));
  proc.stderr.on('data', (d) => (stderr += String(d)));
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  // 'close', not 'exit': 'exit' can come before the last of stderr is read
  // (a refused configuration exits within ~0.1 s of writing its one line).
  const code = await new Promise<number | null>((resolve) => proc.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** The running process's id (SIGSTOP / SIGCONT in tests). */
  readonly pid: number;
  /** kill -9 the server (data on disk stays). */
  kill9(): Promise<void>;
  /** Starts it again on the same port and directory. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A redis-server ({@link REDIS_SERVER}) of the test's own on a spare port (never the shared one). */
export async function startRedisServer(
  persistence: 'aof' | 'rdb' | 'none',
  extraArgs: string[] = [],
): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'idpool-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', ...extraArgs];
  if (persistence === 'aof') args.push('--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '');
  else if (persistence === 'rdb') args.push('--appendonly', 'no', '--save', '1 1');
  else args.push('--appendonly', 'no', '--save', '');
  let proc: ChildProcess;
  const start = async () => {
    proc = spawn(REDIS_SERVER, args, { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (!(await redisAnswers(`redis://127.0.0.1:${port}`))) {
      if (Date.now() > deadline) {
        proc.kill('SIGKILL'); // not left running after its test
        throw new Error(`${REDIS_SERVER} on ${port} did not start`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    get pid() {
      return proc.pid!;
    },
    async kill9() {
      proc.kill('SIGKILL');
      await waitExit(proc);
    },
    restart: start,
    async stop() {
      proc.kill('SIGKILL');
      await waitExit(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
