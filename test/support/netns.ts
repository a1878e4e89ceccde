import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { alive } from './pid';
import { redisAnswers } from './redis-ping';

const run = promisify(execFile);

/**
 * Every namespace a lab creates is named `idpt-<pid>-<lab>-<name>`: the pid
 * tells a leftover of a dead run (removed by {@link removeLeftoverLabs})
 * from a lab of a run still going.
 */
const PREFIX = 'idpt';

/**
 * Why network namespaces cannot be used here, or undefined when they can:
 * the partition suite needs root, `ip netns`, veth pairs and tc's clsact.
 */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  const ip = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (ip.status !== 0) return `\`ip netns\` unavailable (${(ip.stderr || String(ip.error)).trim()})`;
  if (spawnSync('tc', ['-V'], { stdio: 'ignore' }).status !== 0) return 'tc (iproute2) missing';
  return undefined;
}

/** Removes namespaces (and the processes in them) that runs now dead left behind; their veths go with them. */
export function removeLeftoverLabs(): void {
  const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  for (const line of list.split('\n')) {
    const m = new RegExp(`^(${PREFIX}-(\\d+)-\\S+)`).exec(line);
    if (!m || alive(Number(m[2]))) continue;
    killAllIn(m[1]);
    spawnSync('ip', ['netns', 'del', m[1]], { stdio: 'ignore' });
  }
}

function killAllIn(ns: string): void {
  const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
  for (const pid of pids.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** One end of a veth pair: its namespace (undefined = the root namespace), device and address. */
export interface LinkEnd {
  readonly ns: string | undefined;
  readonly dev: string;
  readonly addr: string;
}

/** A veth pair with a /30 of its own. */
export interface Link {
  readonly a: LinkEnd;
  readonly b: LinkEnd;
}

let labs = 0;
let subnets = 0;

/**
 * The next /30 in 10.213.0.0/16, used only on veths a lab creates. The pid
 * picks a block of 64 so concurrent runs on one machine do not collide.
 */
function nextSubnet(): [string, string] {
  if (subnets >= 64) throw new Error('a test run uses at most 64 links');
  const base = ((process.pid % 256) * 64 + subnets++) * 4;
  const net = `10.213.${(base >> 8) & 255}.${base & 255}`.split('.').map(Number);
  return [`${net[0]}.${net[1]}.${net[2]}.${net[3] + 1}`, `${net[0]}.${net[1]}.${net[2]}.${net[3] + 2}`];
}

/**
 * Network namespaces and veth pairs of one test, removed by destroy() (call
 * it from afterAll: it also runs when the test failed).
 */
export class Lab {
  /** Prefix of the lab's namespace names. */
  readonly id = `${PREFIX}-${process.pid}-${labs++}`;
  private readonly namespaces: string[] = [];
  private readonly procs: ChildProcess[] = [];
  private links = 0;

  /** Creates a namespace with its loopback up; returns its name. */
  async namespace(name: string): Promise<string> {
    const ns = `${this.id}-${name}`;
    await run('ip', ['netns', 'add', ns]);
    this.namespaces.push(ns);
    await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    return ns;
  }

  /** A veth pair between `a` (undefined = root) and `b`, addresses .1 (a) and .2 (b) of a fresh /30. */
  async link(a: string | undefined, b: string): Promise<Link> {
    const [addrA, addrB] = nextSubnet();
    const stem = `ip${process.pid.toString(36)}${this.id.split('-')[2]}l${this.links++}`;
    const devA = `${stem}a`;
    const devB = `${stem}b`;
    if (devA.length > 15) throw new Error(`interface name ${devA} too long`);
    // Created in b (always a namespace) so deleting that namespace removes the pair.
    await run('ip', [
      '-n',
      b,
      'link',
      'add',
      devB,
      'type',
      'veth',
      'peer',
      'name',
      devA,
      'netns',
      a ?? String(process.pid),
    ]);
    for (const [ns, dev, addr] of [
      [a, devA, addrA],
      [b, devB, addrB],
    ] as const) {
      await run('ip', [...nsArgs(ns), 'addr', 'add', `${addr}/30`, 'dev', dev]);
      await run('ip', [...nsArgs(ns), 'link', 'set', dev, 'up']);
    }
    return { a: { ns: a, dev: devA, addr: addrA }, b: { ns: b, dev: devB, addr: addrB } };
  }

  /**
   * Drops every packet arriving at the given ends (both by default): sends
   * succeed and nothing arrives, a half-open link. One end only is an
   * asymmetric cut (packets towards that end are lost).
   */
  async cut(link: Link, ends: readonly ('a' | 'b')[] = ['a', 'b']): Promise<void> {
    for (const end of ends.map((e) => link[e])) {
      await run('tc', [...nsArgs(end.ns), 'qdisc', 'add', 'dev', end.dev, 'clsact']);
      // Classic BPF "ret #2": TC_ACT_SHOT, drop.
      await run('tc', [
        ...nsArgs(end.ns),
        'filter',
        'add',
        'dev',
        end.dev,
        'ingress',
        'bpf',
        'da',
        'bytecode',
        '1,6 0 0 2',
      ]);
    }
  }

  /** Removes the drop filters (of whichever ends have one). */
  async heal(link: Link): Promise<void> {
    for (const end of [link.a, link.b])
      await run('tc', [...nsArgs(end.ns), 'qdisc', 'del', 'dev', end.dev, 'clsact']).catch(() => undefined);
  }

  /** Spawns a command in a namespace (undefined = root); killed by destroy(). */
  spawn(
    ns: string | undefined,
    command: string,
    args: string[],
    options: { env?: NodeJS.ProcessEnv } = {},
  ): ChildProcess {
    const proc =
      ns === undefined
        ? spawn(command, args, { stdio: 'ignore', env: options.env })
        : spawn('ip', ['netns', 'exec', ns, command, ...args], { stdio: 'ignore', env: options.env });
    this.procs.push(proc);
    return proc;
  }

  /** Kills what runs in the lab's namespaces and removes them (their veths go with them). */
  async destroy(): Promise<void> {
    for (const p of this.procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    for (const ns of this.namespaces) {
      killAllIn(ns);
      await run('ip', ['netns', 'del', ns]).catch(() => undefined);
    }
  }
}

function nsArgs(ns: string | undefined): string[] {
  return ns === undefined ? [] : ['-n', ns];
}

/** A redis-server inside a lab namespace, bound to one address there. */
export interface NetnsRedis {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  readonly proc: ChildProcess;
}

/**
 * Starts redis-server in `ns` on `host` (an address of that namespace the
 * root namespace reaches) and waits until it answers there; `alsoBind`
 * adds addresses of links the root namespace is not on.
 */
export async function startRedisIn(
  lab: Lab,
  ns: string,
  host: string,
  port: number,
  extraArgs: string[] = [],
  alsoBind: string[] = [],
): Promise<NetnsRedis> {
  // Protected mode refuses anything but loopback; these addresses exist only on the lab's veths.
  // Its own directory: a replica writes the RDB of its full sync there, not in the checkout.
  const dir = mkdtempSync(join(tmpdir(), 'idpool-netns-redis-'));
  const proc = lab.spawn(ns, 'redis-server', [
    '--port',
    String(port),
    '--bind',
    host,
    ...alsoBind,
    '--protected-mode',
    'no',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    ...extraArgs,
  ]);
  proc.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  await answers(host, port);
  return { host, port, url: `redis://${host}:${port}/0`, proc };
}

/** Waits until a Redis (or Sentinel) answers PING at host:port. */
export async function answers(host: string, port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await redisAnswers(`redis://${host}:${port}`))) {
    if (Date.now() > deadline) throw new Error(`redis on ${host}:${port} did not answer in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
