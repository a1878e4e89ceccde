import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import calculateSlot from 'cluster-key-slot';
import Redis from 'ioredis';
import { REDIS_SERVER, waitExit } from './processes';
import { until } from './sentinel';

const run = promisify(execFile);

/** Node failure detection in these tests: fast, so a topology test stays short. */
const NODE_TIMEOUT_MS = 1000;

export interface ClusterNode {
  readonly port: number;
  /** The node's cluster id (CLUSTER MYID). */
  readonly id: string;
  readonly proc: ChildProcess;
}

/** A Redis Cluster of the test's own: 3 masters with a replica each, on spare ports. */
export interface RedisClusterTopology {
  /** The value of IDPOOL_REDIS_CLUSTER_NODES. */
  readonly seedsEnv: string;
  readonly nodes: readonly ClusterNode[];
  /** A client to one node (not cluster-aware), for admin commands. */
  client(port: number): Redis;
  /** Port of the master that owns `slot` now. */
  ownerOf(slot: number): Promise<number>;
  /** Ports of the masters and of each master's replicas, now. */
  roles(): Promise<{ masters: number[]; replicasOf: Map<number, number[]> }>;
  /** Moves one slot, keys and all, to the master on `toPort` (the protocol redis-cli --cluster reshard uses). */
  migrateSlot(slot: number, toPort: number): Promise<void>;
  kill9(port: number): Promise<void>;
  /** Starts a killed node again on its port, directory and nodes.conf (its data gone: no persistence). */
  restart(port: number): Promise<void>;
  /** Waits until every live node reports cluster_state:ok. */
  waitHealthy(): Promise<void>;
  stop(): Promise<void>;
}

/** The slot of an entity's keys (its key is the hash tag). */
export function entitySlot(entityKey: string): number {
  return calculateSlot(`{${entityKey}}`);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The lowest port the kernel hands out as a connection's local port (`ip_local_port_range`, 32768 by default). */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A port whose cluster bus port (port + 10000) is free too, both below the
 * kernel's range of local ports: a port found free there can be taken by
 * any outgoing connection (the other test files open hundreds) before the
 * node binds it, and the node then exits (seen once in a CI run: its bus
 * port was in the range).
 */
async function clusterPort(taken: Set<number>): Promise<number> {
  const span = ephemeralLow() - 10_000 - 10_000;
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * span);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await portFree(port)) && (await portFree(port + 10_000))) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
}

/**
 * `host`: the address the nodes announce and the seeds name, besides
 * loopback (the chaos run's namespaces reach the nodes there).
 */
export async function startRedisCluster(host = '127.0.0.1'): Promise<RedisClusterTopology> {
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < 6; i++) ports.push(await clusterPort(taken));
  const clients = new Map<number, Redis>();
  const client = (port: number) => {
    let c = clients.get(port);
    if (!c) {
      c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 200, lazyConnect: false });
      c.on('error', () => undefined);
      clients.set(port, c);
    }
    return c;
  };
  const procs = new Map<number, ChildProcess>();
  const dirs: string[] = [];
  const spawnNode = (port: number, dir: string) => {
    const proc = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(port),
        '--bind',
        ...(host === '127.0.0.1' ? [host] : ['127.0.0.1', host]),
        // Protected mode refuses anything but loopback; a lab's address exists only on its veths.
        '--protected-mode',
        'no',
        '--cluster-announce-ip',
        host,
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        String(NODE_TIMEOUT_MS),
        // A replica may always take over, however long its link was down.
        '--cluster-replica-validity-factor',
        '0',
        '--appendonly',
        'no',
        '--save',
        '',
        '--repl-diskless-sync',
        'yes',
        '--repl-diskless-sync-delay',
        '0',
      ],
      { stdio: 'ignore' },
    );
    procs.set(port, proc);
  };
  for (const port of ports) {
    const dir = mkdtempSync(join(tmpdir(), `idpool-cluster-${port}-`));
    dirs.push(dir);
    spawnNode(port, dir);
  }
  await Promise.all(
    ports.map((port) => until(`redis-server ${port}`, async () => (await client(port).ping()) === 'PONG', 10_000)),
  );
  await run(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((p) => `${host}:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
    { timeout: 30_000 },
  ).catch(async (err: unknown) => {
    // No topology to stop() comes back: the nodes go here.
    for (const c of clients.values()) c.disconnect();
    for (const proc of procs.values()) proc.kill('SIGKILL');
    await Promise.all([...procs.values()].map(waitExit));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  const ids = new Map<number, string>();
  for (const port of ports) ids.set(port, String(await client(port).call('CLUSTER', 'MYID')));
  const alive = () => ports.filter((p) => procs.get(p)!.exitCode === null && procs.get(p)!.signalCode === null);

  const topology: RedisClusterTopology = {
    seedsEnv: ports.map((p) => `${host}:${p}`).join(','),
    nodes: ports.map((port) => ({ port, id: ids.get(port)!, proc: procs.get(port)! })),
    client,
    async ownerOf(slot) {
      const from = alive()[0];
      const slots = (await client(from).call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
      const range = slots.find(([lo, hi]) => slot >= lo && slot <= hi);
      if (!range) throw new Error(`slot ${slot} has no owner`);
      return range[2][1];
    },
    async roles() {
      const masters: number[] = [];
      const replicasOf = new Map<number, number[]>();
      for (const port of alive()) {
        const info = await client(port).info('replication');
        if (info.includes('role:master')) masters.push(port);
        else {
          const masterPort = Number(/master_port:(\d+)/.exec(info)?.[1]);
          replicasOf.set(masterPort, [...(replicasOf.get(masterPort) ?? []), port]);
        }
      }
      return { masters, replicasOf };
    },
    async migrateSlot(slot, toPort) {
      const fromPort = await topology.ownerOf(slot);
      if (fromPort === toPort) return;
      const from = client(fromPort);
      const to = client(toPort);
      await to.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', ids.get(fromPort)!);
      await from.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', ids.get(toPort)!);
      for (;;) {
        const keys = (await from.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
        if (keys.length === 0) break;
        await from.call('MIGRATE', '127.0.0.1', toPort, '', 0, 5000, 'KEYS', ...keys);
      }
      for (const port of [toPort, fromPort])
        await client(port).call('CLUSTER', 'SETSLOT', slot, 'NODE', ids.get(toPort)!);
      const { masters } = await topology.roles();
      for (const port of masters)
        if (port !== toPort && port !== fromPort)
          await client(port).call('CLUSTER', 'SETSLOT', slot, 'NODE', ids.get(toPort)!);
    },
    async kill9(port) {
      const proc = procs.get(port)!;
      proc.kill('SIGKILL');
      if (proc.exitCode === null && proc.signalCode === null) await new Promise((r) => proc.once('exit', r));
    },
    async restart(port) {
      clients.get(port)?.disconnect();
      clients.delete(port);
      spawnNode(port, dirs[ports.indexOf(port)]);
      await until(`redis-server ${port}`, async () => (await client(port).ping()) === 'PONG', 10_000);
    },
    async waitHealthy() {
      await until(
        'cluster_state:ok on every live node',
        async () => {
          for (const port of alive())
            if (!String(await client(port).call('CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
          return true;
        },
        30_000,
      );
    },
    async stop() {
      for (const c of clients.values()) c.disconnect();
      for (const proc of procs.values()) proc.kill('SIGKILL');
      await Promise.all([...procs.values()].map(waitExit));
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
  await topology.waitHealthy();
  return topology;
}
