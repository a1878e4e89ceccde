import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { freePort } from './processes';

/**
 * A MariaDB server of the test's own, on a spare port, in a temp directory:
 * for tests that stop, freeze (SIGSTOP) or kill the database. Never the
 * shared server on 3306.
 */
export interface PrivateMariadb {
  readonly port: number;
  /** `mysql://root@127.0.0.1:PORT/idpool` (the schema is created by idpool). */
  readonly url: string;
  readonly pid: number;
  /** SIGSTOP: the server hangs (connections stay open, nothing answers). */
  freeze(): void;
  /** SIGCONT after freeze(). */
  thaw(): void;
  /** kill -9 and wait for exit (data stays). */
  kill9(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  restart(): Promise<void>;
  /** Kills it and removes its directory. */
  destroy(): Promise<void>;
}

/** Whether this machine can run a private MariaDB (binaries present, root to run it as `mysql`). */
export function privateMariadbPossible(): boolean {
  const probe = spawnSync('mariadbd', ['--version'], { stdio: 'ignore' });
  return probe.status === 0 && userInfo().uid === 0;
}

function waitExit(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => proc.once('exit', () => resolve()));
}

/**
 * Creates a data directory (mariadb-install-db, ~3 s) and starts `mariadbd`
 * on a spare port; on 127.0.0.1, or inside a network namespace on one of its
 * addresses (`netns`, `host`: the partition suite).
 */
export async function startPrivateMariadb({
  netns = '',
  host = '127.0.0.1',
  serverArgs = [],
}: {
  /** A network namespace to run it in (the partition suite), listening on `host`, one of its addresses. */
  netns?: string;
  host?: string;
  /** More mariadbd options, such as `--character-set-server=latin1`. */
  serverArgs?: string[];
} = {}): Promise<PrivateMariadb> {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-mariadb-'));
  // mariadbd refuses to run as root; the directory must be the mysql user's.
  const id = (flag: string) => Number(spawnSync('id', [flag, 'mysql'], { encoding: 'utf8' }).stdout.trim());
  chownSync(dir, id('-u'), id('-g'));
  const datadir = join(dir, 'data');
  // A temporary directory of its own: a mariadbd starting removes every
  // `#sql*` file in its tmpdir, and with /tmp shared one starting beside
  // another's mariadb-install-db removed that bootstrap's temporary tables
  // and failed it (seen once in a CI run).
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp);
  chownSync(tmp, id('-u'), id('-g'));
  const install = spawnSync(
    'mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${datadir}`,
      '--auth-root-authentication-method=normal',
      '--user=mysql',
      '--skip-test-db',
      `--tmpdir=${tmp}`,
    ],
    { encoding: 'utf8' },
  );
  if (install.status !== 0) throw new Error(`mariadb-install-db failed: ${install.stderr || install.stdout}`);
  const port = await freePort();
  const url = `mysql://root@${host}:${port}/idpool`;
  let proc: ChildProcess;
  const start = async () => {
    // Small buffers: several of these may run beside the shared server on 2 cores.
    const args = [
      '--no-defaults',
      `--datadir=${datadir}`,
      `--port=${port}`,
      `--bind-address=${host}`,
      `--socket=${join(dir, 's.sock')}`,
      `--tmpdir=${tmp}`,
      '--user=mysql',
      '--skip-log-bin',
      '--innodb-buffer-pool-size=32M',
      ...serverArgs,
    ];
    proc = netns
      ? spawn('ip', ['netns', 'exec', netns, 'mariadbd', ...args], { stdio: 'ignore' })
      : spawn('mariadbd', args, { stdio: 'ignore' });
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        // The unix socket is a file, reachable from any namespace; root may
        // come from anywhere on a lab's private addresses (never 127.0.0.1 there).
        const c = await createConnection({ socketPath: join(dir, 's.sock'), user: 'root', connectTimeout: 1000 });
        if (netns) {
          await c.query("CREATE USER IF NOT EXISTS 'root'@'%'");
          await c.query("GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION");
        }
        await c.end();
        return;
      } catch (err) {
        if (proc.exitCode !== null) throw new Error(`mariadbd on ${port} exited with ${proc.exitCode}`, { cause: err });
        if (Date.now() > deadline) {
          proc.kill('SIGKILL'); // not left running after its test
          throw new Error(`mariadbd on ${port} did not start in 30 s: ${(err as Error).message}`, { cause: err });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  await start();
  return {
    port,
    url,
    get pid() {
      return proc.pid!;
    },
    freeze: () => void proc.kill('SIGSTOP'),
    thaw: () => void proc.kill('SIGCONT'),
    async kill9() {
      proc.kill('SIGCONT');
      proc.kill('SIGKILL');
      await waitExit(proc);
    },
    restart: start,
    async destroy() {
      proc.kill('SIGCONT');
      proc.kill('SIGKILL');
      await waitExit(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
