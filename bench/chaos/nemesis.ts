/**
 * The nemesis: two lanes of faults drawn from the seed, each lane one fault
 * at a time, so at most two at once. Lane A hurts one instance (kill -9,
 * SIGSTOP past the refill lock's TTL, a restart with the clock set back, a
 * half-open Redis or database link, 300 ms of database latency); lane B hurts
 * a dependency (the Redis master killed, a planned failover, a Redis server
 * restarted empty, MariaDB killed and restarted, the database restored from a
 * backup taken minutes earlier). After each heal the lane waits until every
 * instance serves again, which is the fault's recovery.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { until as waitUntil } from '../../test/support/sentinel';
import { sleep } from '../../test/support/wait';
import type { Answer } from './load';
import type { Random } from './random';
import { type ChaosSystem, ClusterRedis, type Node, SentinelRedis } from './system';
import { entitySlot } from '../../test/support/redis-cluster';

const run = promisify(execFile);

export const INSTANCE_FAULTS = [
  'kill -9 + restart an instance',
  'SIGSTOP an instance past the lock TTL',
  'restart an instance with its clock set back',
  "cut an instance's Redis link half-open",
  "cut an instance's database link half-open",
  "300 ms latency on an instance's database link",
] as const;
export const DEPENDENCY_FAULTS = [
  'kill -9 the Redis master (Sentinel promotes)',
  'planned Sentinel failover',
  'restart a Redis server without persistence',
  'kill -9 + restart MariaDB',
  'restore the database from a backup',
] as const;
export const CLUSTER_FAULTS = [
  "reshard an entity's slot to another master",
  'kill -9 a Cluster master (its replica takes over)',
  'planned Cluster failover (CLUSTER FAILOVER)',
  'restart a Redis server without persistence',
  'kill -9 + restart MariaDB',
  'restore the database from a backup',
] as const;
export type FaultKind =
  (typeof INSTANCE_FAULTS)[number] | (typeof DEPENDENCY_FAULTS)[number] | (typeof CLUSTER_FAULTS)[number];

/** Lane B's faults for a topology. */
export function dependencyFaults(system: ChaosSystem): readonly FaultKind[] {
  return system.redis instanceof SentinelRedis ? DEPENDENCY_FAULTS : CLUSTER_FAULTS;
}

/** The refill lock's TTL today (src/pool/refiller.ts): a freeze must outlast it. */
const LOCK_TTL_MS = 10_000;
/** After a Redis data loss, every pool has been reset from the database well within this (by any healthy instance). */
const DATA_LOSS_SETTLE_MS = 30_000;
/** A lane gives up waiting for recovery after this (and reports it). */
const RECOVERY_LIMIT_MS = 90_000;

/** One fault injected: when, what, and what it cost. */
export interface Injection {
  readonly kind: FaultKind;
  readonly detail: string;
  readonly at: number;
  healAt?: number;
  /** How many answers were recorded at the heal: every answer to a request started after it comes later. */
  healIndex?: number;
  /** From the heal until every instance answered 200 again; undefined = not within RECOVERY_LIMIT_MS. */
  unavailableMs?: number;
  /** Ids reserved and neither handed out nor pooled: change from before the fault to after recovery. */
  wasted?: number;
}

/** What the nemesis reads from the system between faults. */
export interface Probe {
  /** Ids reserved and neither handed out nor pooled; undefined when the database or Redis does not answer. */
  wasted(): Promise<number | undefined>;
  /** Whether some entity's database offset is at or below its Redis fence (the database went back: a restore). */
  databaseBehindFence(): Promise<boolean>;
}

/**
 * Faults that can lose Redis's copy of the fence (an empty server, writes
 * not yet replicated). While the database is behind a fence, that copy is
 * the only record of the ids issued since the backup: losing it too repeats
 * them, whatever idpool does, so the nemesis does not combine the two
 * (docs/ha.md "A restore, then a Redis data loss"). The fence check
 * (IDPOOL_FENCE_CHECK_MS) now ends that state within about one interval of
 * a restore, and the hold below ends with it; it stays a reading of the
 * offsets, not a fixed time, as a run can be late (a refill lock held by a
 * frozen instance until its TTL, a loaded machine).
 */
const LOSES_REDIS_DATA: ReadonlySet<FaultKind> = new Set<FaultKind>([
  'kill -9 the Redis master (Sentinel promotes)',
  'restart a Redis server without persistence',
  'kill -9 a Cluster master (its replica takes over)',
]);

/** A span of time when requests to a node may fail without an answer: the nemesis took it away. */
export interface Excuse {
  readonly node: number;
  readonly from: number;
  to: number;
}

export class Nemesis {
  readonly injections: Injection[] = [];
  readonly excuses: Excuse[] = [];
  /** Problems of the nemesis itself (a fault it could not inject or heal). */
  readonly problems: string[] = [];
  /** Per restore: ms until no entity's database offset was behind its fence any more (undefined: not by the end). */
  readonly behindAfterRestore: (number | undefined)[] = [];
  /** Faults drawn but not injected: together with an earlier one they would lose both records of the issued ids. */
  heldBack = 0;
  /** When the last Redis data-loss fault healed. */
  private lastDataLossAt = -Infinity;
  private readonly backups: { at: number; file: string }[] = [];
  private readonly dir = mkdtempSync(join(tmpdir(), 'idpool-chaos-backup-'));
  private readonly scale: number;

  constructor(
    private readonly system: ChaosSystem,
    private readonly random: Random,
    /** The entities' keys (a reshard moves one's slot). */
    private readonly entityKeys: readonly string[],
    private readonly answers: readonly Answer[],
    private readonly probe: Probe,
    private readonly log: (line: string) => void,
    minutes: number,
  ) {
    // Fault lengths are the issue's for a 30-minute run, shorter in a shorter run.
    this.scale = Math.min(1, Math.max(0.1, minutes / 30));
  }

  /** Runs both lanes and the backups until `until` (ms since the epoch), every fault healed by then. */
  async run(until: number): Promise<void> {
    const backupEvery = this.backupAgeMs() / 2;
    const backups = (async () => {
      while (Date.now() < until) {
        // A dump during a restore fails (a table was redefined under it): the next one is the backup.
        await this.backup().catch((err: Error) =>
          this.log(`chaos: backup failed, the next one counts: ${err.message}`),
        );
        await sleep(backupEvery);
      }
    })();
    await Promise.all([this.lane(INSTANCE_FAULTS, until), this.lane(dependencyFaults(this.system), until), backups]);
    await Promise.all(this.watches);
  }

  private readonly watches: Promise<void>[] = [];

  /** Measures how long the database stays behind some fence after a restore (until `until`). */
  private watchBehind(from: number, until: number): void {
    const slot = this.behindAfterRestore.push(undefined) - 1;
    this.watches.push(
      (async () => {
        while (Date.now() < until) {
          if (!(await this.probe.databaseBehindFence().catch(() => true))) {
            this.behindAfterRestore[slot] = Date.now() - from;
            return;
          }
          // Finer than the fence check's interval, so the figure shows it.
          await sleep(250);
        }
      })(),
    );
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A backup restored is at least this old ("minutes earlier"; 40 s in a 3-minute run). */
  private backupAgeMs(): number {
    return Math.max(40_000, 120_000 * this.scale);
  }

  private seconds(lo: number, hi: number): number {
    return Math.round((lo + this.random.next() * (hi - lo) * this.scale) * 1000);
  }

  private async lane(kinds: readonly FaultKind[], until: number): Promise<void> {
    let deck: FaultKind[] = [];
    // Warm-up: the load runs fault-free first.
    await sleep(this.seconds(5, 20));
    for (;;) {
      if (deck.length === 0) deck = this.random.shuffle(kinds);
      const kind = deck.shift()!;
      const node = this.system.nodes[this.random.int(0, this.system.nodes.length - 1)];
      const lengthMs = this.seconds(5, 90);
      // A fault must be healed, and its recovery seen, before the run ends.
      if (Date.now() + lengthMs + 20_000 > until) return;
      if (await this.wouldLoseBothRecords(kind)) {
        // Later, not never: the deck still deals every kind.
        deck.push(kind);
        this.heldBack++;
        await sleep(1000);
        continue;
      }
      const before = await this.probe.wasted();
      this.log(`chaos: injecting ${kind} (instance ${node.index} if it is an instance fault)`);
      const injection = await this.inject(kind, node, lengthMs).catch((err: Error) => {
        this.problems.push(`${kind}: ${err.message}`);
        return undefined;
      });
      if (injection) {
        this.injections.push(injection);
        injection.unavailableMs = await this.recovery(injection.healAt!, injection.healIndex!);
        const after = await this.probe.wasted();
        if (injection.kind === 'restore the database from a backup') this.watchBehind(injection.healAt!, until);
        if (LOSES_REDIS_DATA.has(injection.kind)) this.lastDataLossAt = injection.healAt!;
        if (before !== undefined && after !== undefined) injection.wasted = after - before;
        this.log(
          `chaos: ${injection.kind} (${injection.detail}): ${injection.unavailableMs === undefined ? 'NO recovery' : `ids again ${(injection.unavailableMs / 1000).toFixed(1)} s after the heal`}`,
        );
      }
      await sleep(this.seconds(2, 30));
    }
  }

  /** Ms from `healAt` until every running, unfrozen node answered 200 to a request started after it. */
  /**
   * A Redis data-loss fault while the database is behind a fence (after a
   * restore, before the fence check carried it past), or a restore within
   * DATA_LOSS_SETTLE_MS of a data loss (the pools' resets may still read the
   * database, and would fence at the restored offsets).
   */
  private async wouldLoseBothRecords(kind: FaultKind): Promise<boolean> {
    if (LOSES_REDIS_DATA.has(kind)) return this.probe.databaseBehindFence().catch(() => true);
    if (kind === 'restore the database from a backup') return Date.now() - this.lastDataLossAt < DATA_LOSS_SETTLE_MS;
    return false;
  }

  private async recovery(healAt: number, healIndex: number): Promise<number | undefined> {
    const deadline = Date.now() + RECOVERY_LIMIT_MS;
    const served = new Map<number, number>();
    for (let seen = healIndex; ;) {
      for (; seen < this.answers.length; seen++) {
        const a = this.answers[seen];
        if (a.status === 200 && a.start >= healAt && !served.has(a.node)) served.set(a.node, a.end);
      }
      const waiting = this.system.nodes.filter((n) => !served.has(n.index) && !this.excused(n.index));
      if (waiting.length === 0) return Math.max(0, ...[...served.values()].map((t) => t - healAt));
      if (Date.now() > deadline) return undefined;
      await sleep(100);
    }
  }

  private excused(node: number): boolean {
    return this.excuses.some((e) => e.node === node && e.to === Infinity);
  }

  /** Marks a node away on purpose until the returned function is called. */
  private away(node: Node): () => void {
    const excuse: Excuse = { node: node.index, from: Date.now(), to: Infinity };
    this.excuses.push(excuse);
    return () => {
      excuse.to = Date.now();
    };
  }

  private async inject(kind: FaultKind, node: Node, lengthMs: number): Promise<Injection | undefined> {
    const at = Date.now();
    const { db, lab } = this.system;
    const sentinel = () => {
      if (!(this.system.redis instanceof SentinelRedis)) throw new Error(`${kind} needs Sentinel`);
      return this.system.redis;
    };
    const cluster = () => {
      if (!(this.system.redis instanceof ClusterRedis)) throw new Error(`${kind} needs a Cluster`);
      return this.system.redis.cluster;
    };
    const done = (detail: string): Injection => ({
      kind,
      detail,
      at,
      healAt: Date.now(),
      healIndex: this.answers.length,
    });
    switch (kind) {
      case 'kill -9 + restart an instance': {
        const back = this.away(node);
        await node.kill9();
        const downMs = this.random.int(500, 3000);
        await sleep(downMs);
        const heal = done(`instance ${node.index}, down ${downMs} ms`);
        await node.start();
        back();
        return heal;
      }
      case 'SIGSTOP an instance past the lock TTL': {
        const frozenMs = LOCK_TTL_MS + this.seconds(1, 20);
        const back = this.away(node);
        node.signal('SIGSTOP');
        await sleep(frozenMs);
        node.signal('SIGCONT');
        const heal = done(`instance ${node.index}, ${(frozenMs / 1000).toFixed(1)} s`);
        // Requests it held answer at once after SIGCONT, or time out: give them their client timeout.
        setTimeout(back, 1000);
        return heal;
      }
      case 'restart an instance with its clock set back': {
        const backS = this.random.int(5, 20);
        const back = this.away(node);
        await node.kill9();
        const heal = done(`instance ${node.index}, ${backS} s back`);
        await node.start(backS);
        back();
        return heal;
      }
      case "cut an instance's Redis link half-open":
      case "cut an instance's database link half-open": {
        const link = kind.includes('Redis') ? node.redis : node.db;
        await lab.cut(link);
        await sleep(lengthMs);
        const heal = done(`instance ${node.index}, ${(lengthMs / 1000).toFixed(1)} s`);
        await lab.heal(link);
        return heal;
      }
      case "300 ms latency on an instance's database link": {
        node.dbRelay.setLatency(300);
        await sleep(lengthMs);
        const heal = done(`instance ${node.index}, ${(lengthMs / 1000).toFixed(1)} s`);
        node.dbRelay.setLatency(0);
        return heal;
      }
      case 'kill -9 the Redis master (Sentinel promotes)': {
        const redis = sentinel();
        const port = await redis.masterPort();
        const server = redis.server(port);
        await server.kill9();
        await redis.waitPromotion(port);
        const heal = done(`master ${port}, promoted ${((Date.now() - at) / 1000).toFixed(1)} s after the kill`);
        // Back empty, a replica of the new master.
        await redis.restart(server, false);
        return heal;
      }
      case 'planned Sentinel failover': {
        const redis = sentinel();
        const port = await redis.masterPort();
        const asks = await redis.plannedFailover(port);
        return done(`from ${port} to ${await redis.masterPort()}${asks > 1 ? `, asked ${asks} times` : ''}`);
      }
      case 'restart a Redis server without persistence': {
        if (this.system.redis instanceof ClusterRedis) {
          const topology = this.system.redis.cluster;
          const port = this.random.pick(topology.nodes).port;
          const role = (await topology.roles()).masters.includes(port) ? 'a master' : 'a replica';
          await topology.kill9(port);
          await topology.restart(port);
          return done(`${role} (${port})`);
        }
        const redis = sentinel();
        const server = this.random.pick(redis.servers);
        const master = (await redis.masterPort()) === server.port;
        const role = master ? 'the master' : 'a replica';
        await server.kill9();
        // The master back empty before the Sentinels notice: its replicas resync to nothing.
        await redis.restart(server, master);
        return done(`${role} (${server.port})`);
      }
      case "reshard an entity's slot to another master": {
        const topology = cluster();
        const slot = entitySlot(this.random.pick(this.entityKeys));
        const from = await topology.ownerOf(slot);
        const to = this.random.pick((await topology.roles()).masters.filter((p) => p !== from));
        await topology.migrateSlot(slot, to);
        return done(`slot ${slot} from ${from} to ${to}`);
      }
      case 'kill -9 a Cluster master (its replica takes over)': {
        const topology = cluster();
        const { masters, replicasOf } = await topology.roles();
        // A master whose replica is up: without one its slots would stay down.
        const port = this.random.pick(masters.filter((m) => (replicasOf.get(m) ?? []).length > 0));
        const replicas = replicasOf.get(port)!;
        await topology.kill9(port);
        await waitUntil(
          'its replica to take over',
          async () => (await topology.roles()).masters.some((m) => replicas.includes(m)),
          60_000,
        );
        await topology.waitHealthy();
        const heal = done(`master ${port}, replica promoted ${((Date.now() - at) / 1000).toFixed(1)} s after the kill`);
        // Back empty; it rejoins as a replica of the promoted one.
        await topology.restart(port);
        return heal;
      }
      case 'planned Cluster failover (CLUSTER FAILOVER)': {
        const topology = cluster();
        const { replicasOf } = await topology.roles();
        const replica = this.random.pick([...replicasOf.values()].flat());
        await topology.client(replica).call('CLUSTER', 'FAILOVER');
        await waitUntil(
          'the replica to take over',
          async () => (await topology.roles()).masters.includes(replica),
          60_000,
        );
        return done(`replica ${replica} promoted`);
      }
      case 'kill -9 + restart MariaDB': {
        await db.kill9();
        await sleep(this.random.int(500, 5000));
        await db.restart();
        return done(`down ${((Date.now() - at) / 1000).toFixed(1)} s`);
      }
      case 'restore the database from a backup': {
        const old = this.backups.filter((b) => Date.now() - b.at >= this.backupAgeMs()).pop();
        if (!old) return undefined;
        await run('sh', ['-c', `mysql -h127.0.0.1 -P${db.port} -uroot idpool < '${old.file}'`]);
        return done(`taken ${((at - old.at) / 1000).toFixed(0)} s earlier`);
      }
    }
  }

  private async backup(): Promise<void> {
    const file = join(this.dir, `idpool-${Date.now()}.sql`);
    const at = Date.now();
    await run('sh', [
      '-c',
      `mysqldump -h127.0.0.1 -P${this.system.db.port} -uroot --single-transaction idpool > '${file}'`,
    ]);
    this.backups.push({ at, file });
  }
}
