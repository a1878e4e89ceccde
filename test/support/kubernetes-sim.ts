/**
 * A Deployment run here as Kubernetes runs it, for kubernetes-roll.test.ts:
 * pods are real idpool processes (the built dist, as the image runs it)
 * with exactly the container's environment; the kubelet's probes are polled
 * at the manifest's periods, with its timeouts and thresholds; a pod being
 * deleted leaves the endpoints at once, runs its preStop, gets SIGTERM, and
 * SIGKILL when the grace period ends; the Deployment controller rolls by
 * maxSurge/maxUnavailable; and a client-side balancer sends only to the
 * endpoints, which it learns {@link PROXY_LAG_MS} late, as kube-proxy does.
 *
 * Every period and delay of the manifest (probe periods, preStop, grace
 * period) is multiplied by one factor (`scale`), so a roll of 10 s preStops
 * fits a CI run; probe timeouts and thresholds stay as they are.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { BUILT_MAIN, ensureBuilt } from './build';
import type { Container, EnvVar, Probe } from './kubernetes';
import { freePort, waitExit } from './processes';

const ROOT = join(__dirname, '..', '..');

/**
 * How late the balancer learns an endpoint change, in real ms (not
 * scaled): kube-proxy on each node applies an EndpointSlice change about
 * a second after the control plane makes it. At the roll test's factor
 * of 0.5 that stands for 2 s of the fleet's 10 s preStop.
 */
const PROXY_LAG_MS = 1000;

/** What the Dockerfile's runtime stage sets (ENV) under the manifest's env. */
const IMAGE_ENV = { NODE_ENV: 'production', IDPOOL_PORT: '8080', IDPOOL_DATABASE_URL: 'sqlite:/data/idpool.db' };

/** The container's environment as the kubelet builds it: values, Secret keys (`secrets[name][key]`), nothing else. */
export function containerEnv(
  env: readonly EnvVar[],
  secrets: Record<string, Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = { ...IMAGE_ENV };
  for (const e of env) {
    const ref = e.valueFrom?.secretKeyRef;
    if (e.value !== undefined) out[e.name] = e.value;
    else if (ref) {
      const value = secrets[ref.name]?.[ref.key];
      if (value !== undefined) out[e.name] = value;
      else if (!ref.optional) throw new Error(`${e.name}: Secret ${ref.name} has no key ${ref.key}`);
    } else throw new Error(`${e.name}: the simulation knows values and secretKeyRef only (${JSON.stringify(e)})`);
  }
  return out;
}

type Phase = 'starting' | 'running' | 'terminating' | 'gone';

/** One pod: its process, its probes, its deletion. */
export class Pod {
  readonly name: string;
  url = '';
  /** The admin port's address (the manifest's IDPOOL_ADMIN_PORT, replaced as IDPOOL_PORT is), or `url` without one. */
  adminUrl = '';
  phase: Phase = 'starting';
  ready = false;
  /** How the process ended: 'SIGTERM' (exited within the grace period) or 'SIGKILL'. */
  ended: { by: 'SIGTERM' | 'SIGKILL'; code: number | null } | undefined;
  livenessFailures = 0;
  private proc: ChildProcess | undefined;
  private out = '';
  private timers: NodeJS.Timeout[] = [];

  constructor(
    readonly revision: string,
    private readonly container: Container,
    private readonly pod: { terminationGracePeriodSeconds?: number },
    private readonly env: Record<string, string>,
    private readonly scale: number,
  ) {
    this.name = `idpool-${revision}-${randomBytes(3).toString('hex').slice(0, 5)}`;
  }

  output(): string {
    return this.out;
  }

  private ms(seconds: number): number {
    return seconds * 1000 * this.scale;
  }

  /**
   * Starts the process on a port of its own (pods have an address each;
   * here they share loopback, so IDPOOL_PORT and IDPOOL_ADMIN_PORT are the values replaced),
   * then the startup probe, then liveness and readiness.
   */
  async start(): Promise<void> {
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    // Nothing of the test's environment: the container's own, and what the kubelet adds.
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      ...this.env,
      HOSTNAME: this.name,
      IDPOOL_PORT: String(port),
    };
    if (env.IDPOOL_ADMIN_PORT !== undefined) env.IDPOOL_ADMIN_PORT = String(await freePort());
    this.adminUrl = env.IDPOOL_ADMIN_PORT === undefined ? this.url : `http://127.0.0.1:${env.IDPOOL_ADMIN_PORT}`;
    await ensureBuilt();
    const proc = spawn(process.execPath, [BUILT_MAIN], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    proc.stdout.on('data', (d) => (this.out += String(d)));
    proc.stderr.on('data', (d) => (this.out += String(d)));
    proc.once('exit', () => {
      this.phase = 'gone';
      this.ready = false;
      for (const t of this.timers) clearInterval(t);
    });
    const startup = this.container.startupProbe;
    if (startup) {
      let failures = 0;
      while (!(await this.probe(startup))) {
        if (this.phase === 'gone') throw new Error(`${this.name} exited while starting:\n${this.out}`);
        if (++failures >= (startup.failureThreshold ?? 3))
          throw new Error(
            `${this.name} failed its startup probe ${failures} times (${this.ms(startup.periodSeconds ?? 10) * failures} ms):\n${this.out}`,
          );
        await sleep(this.ms(startup.periodSeconds ?? 10));
      }
    }
    if (this.phase === 'starting') this.phase = 'running';
    const { livenessProbe: liveness, readinessProbe: readiness } = this.container;
    if (liveness)
      this.every(liveness, (ok, failures) => {
        if (!ok) this.livenessFailures = Math.max(this.livenessFailures, failures);
      });
    if (readiness) {
      let successes = 0;
      const check = (ok: boolean, failures: number) => {
        successes = ok ? successes + 1 : 0;
        if (ok && successes >= (readiness.successThreshold ?? 1)) this.ready = this.phase === 'running';
        if (!ok && failures >= (readiness.failureThreshold ?? 3)) this.ready = false;
      };
      // The first readiness probe runs at once after the startup probe, then every period.
      check(await this.probe(readiness), 0);
      this.every(readiness, check);
    }
  }

  private every(probe: Probe, then: (ok: boolean, consecutiveFailures: number) => void): void {
    let failures = 0;
    let running = false;
    this.timers.push(
      setInterval(
        () => {
          if (running || this.phase === 'gone') return;
          running = true;
          void this.probe(probe).then((ok) => {
            running = false;
            failures = ok ? 0 : failures + 1;
            then(ok, failures);
          });
        },
        this.ms(probe.periodSeconds ?? 10),
      ),
    );
  }

  /**
   * One HTTP probe: a 2xx or 3xx within the probe's timeout. The timeout is
   * the manifest's, not scaled: it measures how fast this machine answers,
   * not the schedule, and a shared CI machine is slower than a node.
   */
  private async probe(probe: Probe): Promise<boolean> {
    try {
      const res = await fetch(`${this.url}${probe.httpGet.path}`, {
        signal: AbortSignal.timeout((probe.timeoutSeconds ?? 1) * 1000),
      });
      await res.arrayBuffer();
      return res.status >= 200 && res.status < 400;
    } catch {
      return false;
    }
  }

  /**
   * Deletion: out of the endpoints at once, the preStop hook (`sleep N`,
   * the one form the manifests use), SIGTERM, SIGKILL at the end of the
   * grace period (which counts from the deletion, preStop included).
   */
  async delete(): Promise<void> {
    const proc = this.proc;
    if (!proc || this.phase === 'gone') return;
    this.phase = 'terminating';
    this.ready = false;
    const began = Date.now();
    const graceMs = this.ms(this.pod.terminationGracePeriodSeconds ?? 30);
    const command = this.container.lifecycle?.preStop?.exec?.command;
    if (command) {
      if (command[0] !== 'sleep' || command.length !== 2)
        throw new Error(`preStop ${command.join(' ')}: only sleep N is simulated`);
      await sleep(Math.min(this.ms(Number(command[1])), graceMs));
    }
    proc.kill('SIGTERM');
    const left = graceMs - (Date.now() - began);
    const exited = await Promise.race([waitExit(proc), sleep(Math.max(0, left)).then(() => 'grace over' as const)]);
    if (exited === 'grace over') {
      proc.kill('SIGKILL');
      this.ended = { by: 'SIGKILL', code: await waitExit(proc) };
    } else this.ended = { by: 'SIGTERM', code: exited };
  }

  /** For clean-up after a failed test. */
  async kill(): Promise<void> {
    if (!this.proc || this.phase === 'gone') return;
    this.proc.kill('SIGKILL');
    await waitExit(this.proc);
  }
}

/** maxSurge / maxUnavailable as the Deployment controller reads them: a count, or a percentage (surge up, unavailable down). */
export function resolveIntOrPercent(value: number | string, replicas: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const percent = Number(/^(\d+)%$/.exec(value)?.[1] ?? NaN);
  if (Number.isNaN(percent)) throw new Error(`not an int or percentage: ${value}`);
  return (roundUp ? Math.ceil : Math.floor)((percent * replicas) / 100);
}

/** A client-side Service: round robin over the endpoints it knows, which it learns {@link PROXY_LAG_MS} late. */
export class Balancer {
  private known: Pod[] = [];
  private next = 0;
  private timer: NodeJS.Timeout;
  /** The fewest endpoints the balancer knew at once since it started. */
  fewest = Infinity;

  constructor(pods: () => readonly Pod[]) {
    this.timer = setInterval(() => {
      const endpoints = pods().filter((p) => p.ready && p.phase === 'running');
      // What the control plane decides now, the proxies apply PROXY_LAG_MS later.
      setTimeout(() => {
        this.known = endpoints;
        this.fewest = Math.min(this.fewest, endpoints.length);
      }, PROXY_LAG_MS);
    }, 50);
  }

  pick(): Pod | undefined {
    if (this.known.length === 0) return undefined;
    return this.known[this.next++ % this.known.length];
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
