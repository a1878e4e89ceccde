import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { alive } from './pid';
import { freePort } from './processes';

/** The Debian layout: /usr/lib/postgresql/<major>/bin (what `.ci/run` starts the shared server from). */
function postgresBin(): string {
  const base = '/usr/lib/postgresql';
  const major = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a))[0] : undefined;
  if (!major) throw new Error(`no PostgreSQL server binaries under ${base}`);
  return join(base, major, 'bin');
}

/** Pids whose parent is `pid` (from /proc; Linux). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of stat is the parent pid; the command (field 2) may hold spaces, so split after its ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return children;
}

export interface PostgresServer {
  readonly port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** SIGKILL to the postmaster and every backend at once, as a crashed host. */
  kill9(): Promise<void>;
  /** SIGSTOP / SIGCONT the whole server: it stops answering without closing a connection. */
  pause(): void;
  resume(): void;
  /** Starts it again on the same port and data directory (crash recovery runs first). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A PostgreSQL server of the test's own on a spare port (never the shared
 * one), in a temporary data directory. PostgreSQL refuses to run as root,
 * so under root it runs as the `postgres` user.
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = postgresBin();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'idpool-pg-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot
    ? {
        uid: Number(execFileSync('id', ['-u', 'postgres']).toString()),
        gid: Number(execFileSync('id', ['-g', 'postgres']).toString()),
      }
    : {};
  if (asRoot) chownSync(dir, ids.uid!, ids.gid!);
  // --no-sync: the cluster is thrown away after the test; only its own crash recovery matters.
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { ...ids, stdio: 'ignore' },
  );

  let proc: ChildProcess | undefined;
  const start = async () => {
    proc = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-k', dir, '-c', 'fsync=off'],
      {
        ...ids,
        stdio: 'ignore',
      },
    );
    const deadline = Date.now() + 30_000;
    for (;;) {
      const probe = new Client({
        connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
        connectionTimeoutMillis: 1000,
      });
      try {
        await probe.connect();
        await probe.end();
        return;
      } catch {
        await probe.end().catch(() => undefined);
        if (Date.now() > deadline) throw new Error(`private PostgreSQL on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  // Every backend makes itself a process-group leader (setsid in
  // InitPostmasterChild), so the postmaster's group does not reach them:
  // signal the postmaster and each of its children by pid.
  const signalAll = (signal: NodeJS.Signals): number[] => {
    const pids = proc?.pid ? [proc.pid, ...childrenOf(proc.pid)] : [];
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
    return pids;
  };
  const killAll = async () => {
    const p = proc;
    const pids = signalAll('SIGKILL');
    signalAll('SIGCONT');
    if (p?.exitCode === null && p.signalCode === null) await new Promise((r) => p.once('exit', r));
    // A restart needs every backend gone from the data directory's shared memory.
    const deadline = Date.now() + 10_000;
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  };
  await start();
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    kill9: killAll,
    pause: () => void signalAll('SIGSTOP'),
    resume: () => void signalAll('SIGCONT'),
    restart: start,
    async stop() {
      await killAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
