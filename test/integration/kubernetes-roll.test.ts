/**
 * The fleet overlay's Deployment, rendered by `kubectl kustomize`, run here
 * as Kubernetes would run it (test/support/kubernetes-sim.ts): three real
 * idpool processes of the built dist with exactly the container's
 * environment (the Secrets' values: a schema of the shared MariaDB and a
 * redis-server of the test's own), probes at the manifest's periods, then a
 * rolling update to three new pods by its maxSurge/maxUnavailable with its
 * preStop and grace period, under load through a balancer that sends only
 * to ready endpoints. Every time is the manifest's own (SCALE = 1: preStop
 * 10 s, readiness every 5 s, grace 30 s; a smaller SCALE shortens them all
 * alike for a quick local run). Then: no request failed but with 503 and Retry-After, no
 * id twice, never fewer ready endpoints than replicas − maxUnavailable,
 * every old pod ended by SIGTERM within its grace, none restarted by its
 * liveness probe.
 */
import { randomBytes } from 'node:crypto';
import { errorMessage } from '../../src/errors';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_TOKEN, register } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { only, podOf, renderOverlay } from '../support/kubernetes';
import { Balancer, Pod, containerEnv, resolveIntOrPercent, sleep } from '../support/kubernetes-sim';
import { type PrivateDeployment, privateDeployment } from '../support/private-deployment';

const SCALE = 1;
/** Client loops taking at once through the balancer. */
const CLIENTS = 6;

interface Outcome {
  ids: Map<string, string[]>;
  servedBy: Map<string, number>;
  retryable503: number;
  failures: string[];
  requests: number;
}

describeWithServices('the fleet Deployment rolled as Kubernetes would', { kubectl: true, mysql: true }, () => {
  const fleet = renderOverlay('fleet');
  const deployment = only(fleet, 'Deployment', 'idpool');
  const { pod: podSpec, container } = podOf(deployment);
  // The HPA owns the count (the Deployment has no `replicas`): a roll starts from its minimum.
  const replicas = (deployment.spec.replicas ?? only(fleet, 'HorizontalPodAutoscaler').spec.minReplicas) as number;
  const rolling = deployment.spec.strategy.rollingUpdate as {
    maxSurge: number | string;
    maxUnavailable: number | string;
  };
  const maxSurge = resolveIntOrPercent(rolling.maxSurge, replicas, true);
  const maxUnavailable = resolveIntOrPercent(rolling.maxUnavailable, replicas, false);

  let deps: PrivateDeployment;
  let env: Record<string, string>;
  const pods: Pod[] = [];

  beforeAll(async () => {
    deps = await privateDeployment();
    env = containerEnv(container.env ?? [], {
      'idpool-dependencies': { 'database-url': deps.databaseUrl, 'redis-url': deps.redis.url },
      'idpool-tokens': { 'admin-token': ADMIN_TOKEN, 'metrics-token': randomBytes(24).toString('hex') },
    });
  });
  afterAll(async () => {
    for (const p of pods) await p.kill();
    await deps.stop();
  });

  async function createPod(revision: string): Promise<Pod> {
    const pod = new Pod(revision, container, podSpec, env, SCALE);
    pods.push(pod);
    await pod.start();
    return pod;
  }

  const live = (revision: string) =>
    pods.filter((p) => p.revision === revision && p.phase !== 'terminating' && p.phase !== 'gone');
  const available = (revision: string) => live(revision).filter((p) => p.ready);

  /**
   * The Deployment controller's rolling update from `from` to `to`: new
   * pods while old + new stay within replicas + maxSurge, old ones deleted
   * while the available stay at least replicas − maxUnavailable.
   */
  async function roll(from: string, to: string): Promise<void> {
    const starting: Promise<Pod>[] = [];
    const deleting: Promise<void>[] = [];
    while (live(from).length > 0 || available(to).length < replicas) {
      const died = pods.find((p) => p.revision === to && p.phase === 'gone');
      if (died) throw new Error(`${died.name} ended during the roll:\n${died.output()}`);
      const surge = replicas + maxSurge - live(from).length - live(to).length;
      for (let i = 0; i < surge && live(to).length < replicas; i++) starting.push(createPod(to));
      const removable = available(from).length + available(to).length - (replicas - maxUnavailable);
      const old = live(from).sort((a, b) => Number(a.ready) - Number(b.ready));
      for (const p of old.slice(0, Math.max(0, removable))) deleting.push(p.delete());
      await sleep(50);
    }
    await Promise.all([...starting, ...deleting]);
  }

  it(`rolls ${replicas} pods under load: nothing but 503 + Retry-After, no id twice`, async () => {
    // The first rollout: replicas pods of revision a, until each is ready.
    // The first alone (it migrates the fresh schema, which the others would
    // wait for in turn, past the scaled startup budget on a loaded machine);
    // the roll measured below starts on a running fleet, as every roll does.
    await createPod('a');
    await Promise.all(Array.from({ length: replicas - 1 }, () => createPod('a')));
    const first = pods[0];
    await waitUntil(() => available('a').length === replicas, 30_000, 'the first pods ready');
    const entities = {
      seg: await register(first.adminUrl, { key: 'roll-seg', mode: 'monotonic', maxSizePerSecond: 0 }),
      sf: await register(first.adminUrl, { key: 'roll-sf', mode: 'snowflake', maxSizePerSecond: 0 }),
    };

    const balancer = new Balancer(() => pods);
    await sleep(1500); // the balancer learns the endpoints
    const outcome: Outcome = { ids: new Map(), servedBy: new Map(), retryable503: 0, failures: [], requests: 0 };
    let loading = true;
    const clients = Array.from({ length: CLIENTS }, (_, i) =>
      client(balancer, i % 2 === 0 ? ['roll-seg', entities.seg] : ['roll-sf', entities.sf], () => loading, outcome),
    );
    await sleep(1000);
    await roll('a', 'b');
    await sleep(1000);
    loading = false;
    await Promise.all(clients);
    balancer.stop();

    const all = [...outcome.ids.values()].flat();
    process.stdout.write(
      `kubernetes-roll: ${outcome.requests} requests, ${all.length} ids, ${outcome.retryable503} answered 503 + Retry-After, ${outcome.failures.length} failed, fewest endpoints ${balancer.fewest}\n`,
    );
    expect(outcome.failures.slice(0, 10)).toEqual([]);
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBeGreaterThan(1000);
    // Both generations served: the load ran across the whole roll.
    const byRevision = (r: string) =>
      pods.filter((p) => p.revision === r).reduce((n, p) => n + (outcome.servedBy.get(p.name) ?? 0), 0);
    expect(byRevision('a')).toBeGreaterThan(0);
    expect(byRevision('b')).toBeGreaterThan(0);
    expect(balancer.fewest).toBeGreaterThanOrEqual(replicas - maxUnavailable);
    for (const p of pods.filter((p) => p.revision === 'a')) expect(p.ended, p.name).toEqual({ by: 'SIGTERM', code: 0 });
    // The kubelet restarts a container after failureThreshold liveness failures in a row; one slow
    // answer on a loaded machine (a probe times out at the manifest's 3 s) restarts nothing.
    const restartAfter = container.livenessProbe?.failureThreshold ?? 3;
    for (const p of pods) expect(p.livenessFailures, p.name).toBeLessThan(restartAfter);
    expect(available('b')).toHaveLength(replicas);
  }, 360_000);
});

/** Takes through the balancer until `running()` is false, recording every answer. */
async function client(
  balancer: Balancer,
  [key, secret]: [string, string],
  running: () => boolean,
  outcome: Outcome,
): Promise<void> {
  while (running()) {
    const pod = balancer.pick();
    if (!pod) {
      outcome.failures.push(`no endpoint to send to (${new Date().toISOString()})`);
      await sleep(50);
      continue;
    }
    outcome.requests++;
    try {
      const res = await fetch(`${pod.url}/apps/${key}/ids`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ count: 20 }),
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await res.json()) as { ids?: string[] };
      if (res.status === 200 && body.ids) {
        outcome.ids.set(`${pod.name}/${outcome.requests}`, body.ids);
        outcome.servedBy.set(pod.name, (outcome.servedBy.get(pod.name) ?? 0) + 1);
        // Six clients at up to 50 takes a second each: load through the whole roll, and the machine's CPU
        // left to the rest of the suite (in a tight loop they kept a core busy: 42 s of CPU for the file).
        await sleep(20);
      } else if (res.status === 503 && res.headers.get('retry-after')) {
        outcome.retryable503++;
        await sleep(Number(res.headers.get('retry-after')) * 1000 * SCALE);
      } else outcome.failures.push(`${pod.name} (${pod.phase}): ${res.status} ${JSON.stringify(body)}`);
    } catch (err) {
      outcome.failures.push(
        `${pod.name} (${pod.phase}): ${errorMessage(err)} ${errorMessage((err as Error).cause ?? '')}`,
      );
    }
  }
}

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
