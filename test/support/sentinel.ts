import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { REDIS_SERVER, freePort, type RedisServer, startRedisServer } from './processes';
import { sleep } from './wait';

/** Sentinel's failure detection in these tests: fast, so a topology test stays short. */
export const DOWN_AFTER_MS = 1000;
const REPLICATION_ARGS = ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'];

/** One master, one replica and three Sentinels on spare ports, all the test's own. */
export interface SentinelTopology {
  readonly masterName: string;
  /** The value of IDPOOL_REDIS_SENTINELS. */
  readonly sentinelsEnv: string;
  /** The two data servers, [initial master, initial replica]. */
  readonly servers: readonly [RedisServer, RedisServer];
  /** Port of the master the Sentinels agree on now. */
  masterPort(): Promise<number>;
  /** Runs a command on one Sentinel. */
  sentinel(...args: string[]): Promise<unknown>;
  stop(): Promise<void>;
}

/** Waits until `check` is true, polling every 50 ms. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

export async function startSentinelTopology(masterName = 'mymaster'): Promise<SentinelTopology> {
  // min-replicas-to-write on the master only: it stops accepting writes it
  // could lose once its replica is gone, while the promoted replica (started
  // without it) serves alone after the old master dies.
  const master = await startRedisServer('none', [
    ...REPLICATION_ARGS,
    '--min-replicas-to-write',
    '1',
    '--min-replicas-max-lag',
    '5',
  ]);
  const replica = await startRedisServer('none', [
    ...REPLICATION_ARGS,
    '--replicaof',
    '127.0.0.1',
    String(master.port),
  ]);
  const r = new Redis(replica.port, '127.0.0.1');
  await until('the replica to sync', async () => (await r.info('replication')).includes('master_link_status:up'));
  r.disconnect();

  const dir = mkdtempSync(join(tmpdir(), 'idpool-sentinel-'));
  const ports = await Promise.all([freePort(), freePort(), freePort()]);
  const procs: ChildProcess[] = ports.map((port, i) => {
    const file = join(dir, `sentinel-${i}.conf`);
    // Sentinel rewrites its config file, so each gets a writable one.
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 2`,
        `sentinel down-after-milliseconds ${masterName} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${masterName} 5000`,
        `sentinel parallel-syncs ${masterName} 1`,
        '',
      ].join('\n'),
    );
    return spawn(REDIS_SERVER, [file, '--sentinel'], { stdio: 'ignore' });
  });
  const clients = ports.map((port) => {
    const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
    c.on('error', () => undefined);
    return c;
  });
  const stop = async () => {
    for (const c of clients) c.disconnect();
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all([master.stop(), replica.stop()]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Every Sentinel knows the replica and the other two Sentinels before any fault.
    await until('the Sentinels to discover each other and the replica', async () => {
      for (const c of clients) {
        const [info] = (await c.call('SENTINEL', 'MASTERS')) as string[][];
        const field = (name: string) => Number(info[info.indexOf(name) + 1]);
        if (field('num-slaves') < 1 || field('num-other-sentinels') < 2) return false;
      }
      return true;
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    masterName,
    sentinelsEnv: ports.map((p) => `127.0.0.1:${p}`).join(','),
    servers: [master, replica],
    async masterPort() {
      const [, port] = (await clients[0].call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName)) as string[];
      return Number(port);
    },
    sentinel: (...args) => clients[0].call('SENTINEL', ...args),
    stop,
  };
}
