/**
 * The system a chaos run attacks: three idpool processes (the built
 * `dist/`), each in a network namespace of its own with three veth links to
 * the root namespace (HTTP, Redis, database, so one can be cut alone);
 * Redis Sentinel (three servers, three Sentinels) in the root namespace on
 * the root address of instance 0's Redis link, which the other namespaces
 * reach through their own Redis link; a private MariaDB behind one relay per
 * instance (the relay adds latency on demand).
 */
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Redis, { Cluster } from 'ioredis';
import { type RedisClusterTopology, startRedisCluster } from '../../test/support/redis-cluster';
import { type PrivateMariadb, startPrivateMariadb } from '../../test/support/mariadb';
import { Lab, type Link, answers } from '../../test/support/netns';
import {
  type Instance,
  LIBFAKETIME,
  type RedisServer,
  freePort,
  startInstance,
  startRedisServer,
} from '../../test/support/processes';
import { type Relay, startRelay } from '../../test/support/relay';
import { DOWN_AFTER_MS, until } from '../../test/support/sentinel';
import { sleep } from '../../test/support/wait';

const run = promisify(execFile);

/** The port every instance listens on inside its own namespace. */
const HTTP_PORT = 8080;
const MASTER = 'mymaster';
const REPLICATION = ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'];

/** One idpool instance of the run: where it lives and its current process. */
export class Node {
  instance: Instance | undefined;
  /** What the processes before the current one wrote. */
  private earlier = '';
  /** Seconds its clock is set back (faketime) in the current process; 0 = the real clock. */
  clockBackS = 0;

  constructor(
    readonly index: number,
    readonly ns: string,
    readonly http: Link,
    readonly redis: Link,
    readonly db: Link,
    readonly dbRelay: Relay,
    private readonly env: Record<string, string>,
  ) {}

  get url(): string {
    return `http://${this.http.b.addr}:${HTTP_PORT}`;
  }

  /** Whether the process runs (it may be frozen). */
  alive(): boolean {
    const p = this.instance?.proc;
    return p?.exitCode === null && p.signalCode === null;
  }

  /** Starts the process, retrying while start-up is refused (a dependency down); `clockBackS` sets its clock back. */
  async start(clockBackS = 0): Promise<void> {
    const env: Record<string, string> = { ...this.env };
    if (clockBackS > 0) {
      env.LD_PRELOAD = LIBFAKETIME;
      env.FAKETIME = `-${clockBackS}s`;
    }
    const deadline = Date.now() + 180_000;
    for (;;) {
      try {
        if (this.instance) this.earlier += this.instance.output();
        this.instance = undefined;
        this.instance = await startInstance(env, 60_000, { netns: this.ns, host: this.http.b.addr }, 'dist');
        this.clockBackS = clockBackS;
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(1000);
      }
    }
  }

  /** Everything every process of this node wrote. */
  output(): string {
    return this.earlier + (this.instance?.output() ?? '');
  }

  async kill9(): Promise<void> {
    const proc = this.instance?.proc;
    if (!proc) return;
    proc.kill('SIGCONT');
    await this.instance!.kill9();
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.instance?.proc.kill(sig);
  }
}

/** The Sentinel-managed Redis: three data servers and three Sentinels. */
export class SentinelRedis {
  private constructor(
    readonly host: string,
    readonly servers: RedisServer[],
    readonly sentinelPorts: number[],
    private readonly sentinels: ChildProcess[],
    private readonly sentinelClient: Redis,
    private readonly dir: string,
  ) {}

  static async start(lab: Lab, host: string): Promise<SentinelRedis> {
    // Every server binds loopback (the harness) and the service address;
    // min-replicas-to-write on all: whichever is master refuses writes it
    // could lose once it has no replica.
    const serverArgs = (extra: string[]) => [
      '--bind',
      '127.0.0.1',
      host,
      '--protected-mode',
      'no',
      '--replica-announce-ip',
      host,
      '--min-replicas-to-write',
      '1',
      '--min-replicas-max-lag',
      '5',
      ...REPLICATION,
      ...extra,
    ];
    const master = await startRedisServer('none', serverArgs([]));
    const replicas = await Promise.all(
      [0, 1].map(() => startRedisServer('none', serverArgs(['--replicaof', host, String(master.port)]))),
    );
    const servers = [master, ...replicas];
    const dir = mkdtempSync(join(tmpdir(), 'idpool-chaos-sentinel-'));
    const ports = await Promise.all([freePort(), freePort(), freePort()]);
    const sentinels = ports.map((port, i) => {
      const file = join(dir, `sentinel-${i}.conf`);
      // Sentinel rewrites its config file, so each gets a writable one.
      writeFileSync(
        file,
        [
          `port ${port}`,
          `bind 127.0.0.1 ${host}`,
          'protected-mode no',
          `dir ${dir}`,
          `sentinel announce-ip ${host}`,
          `sentinel monitor ${MASTER} ${host} ${master.port} 2`,
          `sentinel down-after-milliseconds ${MASTER} ${DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${MASTER} 5000`,
          `sentinel parallel-syncs ${MASTER} 1`,
          `logfile ${join(dir, `sentinel-${i}.log`)}`,
          '',
        ].join('\n'),
      );
      return lab.spawn(undefined, 'redis-server', [file, '--sentinel']);
    });
    await Promise.all(ports.map((p) => answers('127.0.0.1', p)));
    const client = new Redis({ host: '127.0.0.1', port: ports[0], maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    const redis = new SentinelRedis(host, servers, ports, sentinels, client, dir);
    await until(
      'the Sentinels to know both replicas and each other',
      async () => {
        for (const port of ports) {
          const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, lazyConnect: true });
          c.on('error', () => undefined);
          try {
            const [info] = (await c.call('SENTINEL', 'MASTERS')) as string[][];
            const field = (name: string) => Number(info[info.indexOf(name) + 1]);
            if (field('num-slaves') < 2 || field('num-other-sentinels') < 2) return false;
          } finally {
            c.disconnect();
          }
        }
        return true;
      },
      30_000,
    );
    return redis;
  }

  /** IDPOOL_REDIS_SENTINELS and the master's name. */
  env(): Record<string, string> {
    return {
      IDPOOL_REDIS_SENTINELS: this.sentinelPorts.map((p) => `${this.host}:${p}`).join(','),
      IDPOOL_REDIS_SENTINEL_MASTER: MASTER,
    };
  }

  /** A Sentinel-aware client for the harness (the direct consumer, the waste count). */
  client(): Redis {
    const c = new Redis({
      sentinels: this.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
      name: MASTER,
      maxRetriesPerRequest: 1,
      commandTimeout: 2000,
      connectTimeout: 2000,
      // The announced address is the service address, reachable from here too.
      enableOfflineQueue: true,
    });
    c.on('error', () => undefined);
    return c;
  }

  async masterPort(): Promise<number> {
    const [, port] = (await this.sentinelClient.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER)) as string[];
    return Number(port);
  }

  server(port: number): RedisServer {
    const s = this.servers.find((x) => x.port === port);
    if (!s) throw new Error(`no Redis server on ${port}`);
    return s;
  }

  /**
   * Starts a killed server again, empty, in the role the Sentinels gave it:
   * as a real deployment's config file (rewritten by Sentinel) would, not
   * with the `--replicaof` it was first started with (which could make two
   * servers replicas of each other, and no master at all).
   */
  async restart(server: RedisServer, asMaster: boolean): Promise<void> {
    await server.restart();
    const c = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
    c.on('error', () => undefined);
    try {
      // A Sentinel may have made it a replica already: while it loads the master's dataset it answers
      // `LOADING`, which Redis documents as "try again shortly" (seen once in a CI run): asked again for up to 10 s.
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          if (asMaster) await c.call('REPLICAOF', 'NO', 'ONE');
          else await c.call('REPLICAOF', this.host, String(await this.masterPort()));
          break;
        } catch (err) {
          if (!String(err).includes('LOADING') || Date.now() > deadline) throw err;
        }
        await sleep(100);
      }
    } finally {
      c.disconnect();
    }
  }

  /**
   * A planned failover, as an operator runs one: asks the Sentinels, and asks
   * again when a try ends without a promotion. A Sentinel gives up on a
   * failover its chosen replica does not finish within failover-timeout (5 s)
   * and does not start another by itself; a master that is healthy is never
   * failed over automatically. Returns the number of asks.
   */
  async plannedFailover(old: number, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (let asks = 1; ; asks++) {
      // -INPROG (the last try still running) or -NOGOODSLAVE (no replica in sync yet): wait and ask again.
      await this.sentinelClient.call('SENTINEL', 'FAILOVER', MASTER).catch(() => undefined);
      const tryEnds = Math.min(deadline, Date.now() + 15_000);
      while (Date.now() < tryEnds) {
        if ((await this.masterPort().catch(() => old)) !== old) return asks;
        await sleep(50);
      }
      if (Date.now() >= deadline)
        throw new Error(
          `timed out after ${timeoutMs} ms (${asks} asks) waiting for the Sentinels to promote a replica; ` +
            `the Sentinels' last lines:\n${this.sentinelLog(12)}`,
        );
    }
  }

  /** Waits until the Sentinels name a master other than `old` (a promotion). */
  async waitPromotion(old: number, timeoutMs = 60_000): Promise<void> {
    await until('the Sentinels to promote a replica', async () => (await this.masterPort()) !== old, timeoutMs).catch(
      (err: Error) => {
        throw new Error(`${err.message}; the Sentinels' last lines:\n${this.sentinelLog(12)}`);
      },
    );
  }

  /** The last `lines` lines each Sentinel logged. */
  sentinelLog(lines: number): string {
    return this.sentinelPorts
      .map((port, i) => {
        let text: string;
        try {
          text = readFileSync(join(this.dir, `sentinel-${i}.log`), 'utf8');
        } catch {
          text = '(no log)';
        }
        return `sentinel ${port}:\n${text.trimEnd().split('\n').slice(-lines).join('\n')}`;
      })
      .join('\n');
  }

  async stop(): Promise<void> {
    this.sentinelClient.disconnect();
    for (const s of this.sentinels) s.kill('SIGKILL');
    await Promise.all(this.servers.map((s) => s.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis Cluster of three masters with a replica each, announced on the service address. */
export class ClusterRedis {
  private constructor(
    readonly host: string,
    readonly cluster: RedisClusterTopology,
  ) {}

  static async start(host: string): Promise<ClusterRedis> {
    return new ClusterRedis(host, await startRedisCluster(host));
  }

  env(): Record<string, string> {
    return { IDPOOL_REDIS_CLUSTER_NODES: this.cluster.seedsEnv };
  }

  client(): Cluster {
    const c = new Cluster(
      this.cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
      {
        // The nodes announce the service address, reachable from here too.
        redisOptions: { maxRetriesPerRequest: 1, commandTimeout: 2000, connectTimeout: 2000 },
      },
    );
    c.on('error', () => undefined);
    return c;
  }

  stop(): Promise<void> {
    return this.cluster.stop();
  }
}

export type RedisSide = SentinelRedis | ClusterRedis;

/** Everything of one run, torn down by stop(). */
export class ChaosSystem {
  private constructor(
    readonly lab: Lab,
    readonly redis: RedisSide,
    readonly db: PrivateMariadb,
    readonly nodes: Node[],
  ) {}

  static async start(log: (line: string) => void, topology: 'sentinel' | 'cluster'): Promise<ChaosSystem> {
    const lab = new Lab();
    let db: PrivateMariadb | undefined;
    let redis: RedisSide | undefined;
    try {
      const namespaces = await Promise.all([0, 1, 2].map((i) => lab.namespace(`i${i}`)));
      const links: { http: Link; redis: Link; db: Link }[] = [];
      for (const ns of namespaces)
        links.push({
          http: await lab.link(undefined, ns),
          redis: await lab.link(undefined, ns),
          db: await lab.link(undefined, ns),
        });
      // The Redis servers and Sentinels listen on the root end of instance 0's
      // Redis link; the other instances route to it over their own Redis link
      // (a local address of the root namespace: no forwarding involved).
      const serviceHost = links[0].redis.a.addr;
      for (let i = 1; i < 3; i++)
        await run('ip', ['-n', namespaces[i], 'route', 'add', `${serviceHost}/32`, 'via', links[i].redis.a.addr]);
      log(`chaos: namespaces up; Redis on ${serviceHost}`);
      [db, redis] = await Promise.all([
        startPrivateMariadb(),
        topology === 'sentinel' ? SentinelRedis.start(lab, serviceHost) : ClusterRedis.start(serviceHost),
      ]);
      const ports =
        redis instanceof SentinelRedis ? redis.servers.map((s) => s.port) : redis.cluster.nodes.map((n) => n.port);
      log(`chaos: MariaDB on 127.0.0.1:${db.port}, Redis servers (${topology}) on ${ports.join(', ')}`);
      const nodes: Node[] = [];
      for (let i = 0; i < 3; i++) {
        const relay = await startRelay({ host: '127.0.0.1', port: db.port }, { host: links[i].db.a.addr });
        nodes.push(
          new Node(i, namespaces[i], links[i].http, links[i].redis, links[i].db, relay, {
            ...redis.env(),
            IDPOOL_DATABASE_URL: `mysql://root@${relay.host}:${relay.port}/idpool`,
            IDPOOL_PORT: String(HTTP_PORT),
            IDPOOL_REQUEST_LOG: 'false',
            // The clock-set-back restart moves an instance up to 20 s behind the database.
            IDPOOL_MAX_CLOCK_SKEW_MS: '30000',
          }),
        );
      }
      // The first creates the schema; the others start beside each other.
      await nodes[0].start();
      await Promise.all(nodes.slice(1).map((n) => n.start()));
      log(`chaos: instances at ${nodes.map((n) => n.url).join(', ')}`);
      return new ChaosSystem(lab, redis, db, nodes);
    } catch (err) {
      await redis?.stop().catch(() => undefined);
      await db?.destroy().catch(() => undefined);
      await lab.destroy();
      throw err;
    }
  }

  async stop(): Promise<void> {
    for (const n of this.nodes) await n.kill9().catch(() => undefined);
    for (const n of this.nodes) await n.dbRelay.close().catch(() => undefined);
    await this.redis.stop().catch(() => undefined);
    await this.db.destroy().catch(() => undefined);
    await this.lab.destroy();
  }
}
