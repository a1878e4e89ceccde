/**
 * deploy/kubernetes rendered by `kubectl kustomize` (offline) and checked
 * against the Kubernetes API schemas of the pinned `kubernetes-models` (and
 * `@kubernetes-models/prometheus-operator` for ServiceMonitor and
 * PrometheusRule), then by hand for what a schema cannot say: the
 * hardening, probes, drain timing, Secrets, the one Service scraped, and
 * each point of a reviewer's list (issue 48): the admin port reached only
 * from the pods the operator names, readiness that degrades on a shared
 * dependency and liveness on the process, replicas owned by the HPA, zone
 * and node spread, labels scoped to the release, a PDB that protects
 * something (or none), the heap sized from the limit, egress for the
 * webhook and Redis's ports; and that the copies of the Prometheus rules and the Grafana dashboard equal
 * their sources.
 * The simulated roll of the fleet's Deployment: kubernetes-roll.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import { describeWithServices } from '../support/describe-with-services';
import { KUBERNETES_DIR, type KubeObject, OVERLAYS, only, podOf, renderOverlay } from '../support/kubernetes';

const DEPLOY = join(KUBERNETES_DIR, '..');

/**
 * The schema of every kind the overlays may hold; another kind fails the
 * test until it is added here. (Their `validate()` comes from
 * @kubernetes-models/base, whose types the repository's `node` module
 * resolution does not reach: hence the narrow type at the call.)
 */
const MODELS: Record<string, new (data: any) => object> = {
  'v1/ServiceAccount': ServiceAccount,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

/** idpool's own stop is bounded at 10 s (src/main.ts, stopOnSignals). */
const SHUTDOWN_BOUND_S = 10;

/** Name and release: two releases in one namespace select only their own pods. */
const SELECTOR = { 'app.kubernetes.io/name': 'idpool', 'app.kubernetes.io/instance': 'idpool' };

/** Whether a selector of `matchLabels` alone (what the manifests write: the test checks it) selects `labels`. */
const selects = (matchLabels: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.entries(matchLabels).every(([key, value]) => labels[key] === value);

describeWithServices('deploy/kubernetes: every overlay renders and holds', { kubectl: true }, () => {
  const rendered = Object.fromEntries(OVERLAYS.map((o) => [o, renderOverlay(o)])) as Record<
    (typeof OVERLAYS)[number],
    KubeObject[]
  >;
  const workloadOf = (overlay: (typeof OVERLAYS)[number]) =>
    only(rendered[overlay], overlay === 'fleet' ? 'Deployment' : 'StatefulSet', 'idpool');

  it.each(OVERLAYS)('%s: every object is valid by the API schemas of its kind', (overlay) => {
    const kinds = rendered[overlay].map((o) => `${o.apiVersion}/${o.kind}`);
    expect(kinds.filter((k) => !(k in MODELS))).toEqual([]);
    for (const object of rendered[overlay]) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      const model = new Model(object) as { validate(): void };
      expect(() => model.validate(), `${object.kind} ${object.metadata.name}`).not.toThrow();
    }
    // Names are unique per kind, as the API server requires.
    expect(new Set(kinds.map((k, i) => `${k}/${rendered[overlay][i].metadata.name}`)).size).toBe(kinds.length);
  });

  it.each(OVERLAYS)('%s: a non-root, read-only, capability-less pod, writing only to its volumes', (overlay) => {
    const { pod, container } = podOf(workloadOf(overlay));
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    const mounts = Object.fromEntries((container.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    expect(mounts['/tmp']).toBe('tmp');
    const volumes = [
      ...(pod.volumes ?? []).map((v: { name: string }) => v.name),
      ...(workloadOf(overlay).spec.volumeClaimTemplates ?? []).map((c: KubeObject) => c.metadata.name),
    ];
    for (const name of Object.values(mounts)) expect(volumes).toContain(name);
  });

  it.each(OVERLAYS)('%s: liveness on the process only, readiness that degrades on a shared dependency', (overlay) => {
    const { container } = podOf(workloadOf(overlay));
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e]));
    const http = container.ports?.find((p) => p.name === 'http');
    expect(String(http?.containerPort)).toBe(env.IDPOOL_PORT.value);
    // /healthz checks no dependency (src/http/routes/ops.ts): an outage never restarts pods.
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // Redis or the database failing leaves every pod ready, answering 503 + Retry-After (admin-port.test.ts).
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz?shared=degrade', port: 'http' });
    // A start may wait a worker-lease TTL (15 s) and a heartbeat: the startup probe allows much more.
    const startup = container.startupProbe!;
    expect((startup.periodSeconds ?? 10) * (startup.failureThreshold ?? 3)).toBeGreaterThanOrEqual(30);
  });

  it.each(OVERLAYS)(
    '%s: preStop outlasts endpoint removal, and the grace period covers preStop and the stop',
    (overlay) => {
      const { pod, container } = podOf(workloadOf(overlay));
      const command = container.lifecycle?.preStop?.exec?.command ?? [];
      expect(command).toEqual(['sleep', expect.stringMatching(/^\d+$/)]);
      const preStopS = Number(command[1]);
      // Longer than two readiness periods: the pod is out of every proxy's endpoints before SIGTERM.
      expect(preStopS).toBeGreaterThanOrEqual(2 * (container.readinessProbe?.periodSeconds ?? 10));
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStopS + SHUTDOWN_BOUND_S);
    },
  );

  it.each(OVERLAYS)('%s: tokens and connection URLs come from Secrets, never a value in the manifest', (overlay) => {
    const { container } = podOf(workloadOf(overlay));
    const secretRef = (name: string) => container.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef;
    expect(secretRef('IDPOOL_ADMIN_TOKEN')).toEqual({ name: 'idpool-tokens', key: 'admin-token' });
    expect(secretRef('IDPOOL_METRICS_TOKEN')).toEqual({ name: 'idpool-tokens', key: 'metrics-token' });
    expect(secretRef('IDPOOL_OPS_TOKEN')).toEqual({ name: 'idpool-tokens', key: 'ops-token', optional: true });
    if (overlay === 'fleet') {
      expect(secretRef('IDPOOL_DATABASE_URL')).toEqual({ name: 'idpool-dependencies', key: 'database-url' });
      expect(secretRef('IDPOOL_REDIS_URL')).toEqual({ name: 'idpool-dependencies', key: 'redis-url' });
    }
    for (const e of container.env ?? []) if (/TOKEN|PASSWORD/.test(e.name)) expect(e.value).toBeUndefined();
    expect(rendered[overlay].filter((o) => o.kind === 'Secret')).toEqual([]);
  });

  it.each(OVERLAYS)("%s: Services, NetworkPolicies and ServiceMonitor select this release's pods", (overlay) => {
    const objects = rendered[overlay];
    const workload = workloadOf(overlay);
    const labels = workload.spec.template.metadata.labels as Record<string, string>;
    expect(labels).toMatchObject(SELECTOR);
    expect(workload.spec.selector.matchLabels).toEqual(SELECTOR);
    // Every object carries the release's labels, so `kubectl get -l` and a second release tell them apart.
    for (const o of objects) expect(o.metadata.labels, `${o.kind} ${o.metadata.name}`).toMatchObject(SELECTOR);
    const service = only(objects, 'Service', 'idpool');
    expect(service.spec.selector).toEqual(SELECTOR);
    expect(service.spec.ports).toEqual([{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
    for (const p of objects.filter((o) => o.kind === 'NetworkPolicy'))
      expect(p.spec.podSelector).toEqual({ matchLabels: SELECTOR });
    const monitor = only(objects, 'ServiceMonitor').spec;
    expect(monitor.selector.matchLabels).toMatchObject(SELECTOR);
    // The ServiceMonitor's shape beyond its schema: it names the Service's port and scrapes with the metrics token.
    expect(monitor.selector.matchLabels).toEqual(service.metadata.labels);
    expect(monitor.endpoints).toEqual([
      expect.objectContaining({
        port: 'http',
        path: '/metrics',
        bearerTokenSecret: { name: 'idpool-tokens', key: 'metrics-token' },
      }),
    ]);
  });

  it.each(OVERLAYS)(
    '%s: the admin API on a port of its own, reached only from the pods the operator names',
    (overlay) => {
      const objects = rendered[overlay];
      const { container } = podOf(workloadOf(overlay));
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
      const admin = container.ports?.find((p) => p.name === 'admin');
      expect(String(admin?.containerPort)).toBe(env.IDPOOL_ADMIN_PORT);
      expect(env.IDPOOL_ADMIN_PORT).not.toBe(env.IDPOOL_PORT);
      const service = only(objects, 'Service', 'idpool-admin');
      expect(service.spec.selector).toEqual(SELECTOR);
      expect(service.spec.ports).toEqual([{ name: 'admin', port: 8081, targetPort: 'admin', protocol: 'TCP' }]);
      // Every ingress rule: the main port from anywhere, the admin port only from pods labelled by the operator.
      const ingress = objects.filter((o) => o.kind === 'NetworkPolicy').flatMap((p) => p.spec.ingress ?? []);
      expect(ingress).toEqual([
        { ports: [{ port: 8080, protocol: 'TCP' }] },
        {
          from: [
            { podSelector: { matchExpressions: [{ key: 'idpool/admin-client', operator: 'In', values: ['true'] }] } },
          ],
          ports: [{ port: Number(env.IDPOOL_ADMIN_PORT), protocol: 'TCP' }],
        },
      ]);
    },
  );

  it.each(OVERLAYS)(
    '%s: egress for DNS, the alert webhook, and (fleet) Redis with TLS, Sentinel, Cluster and the database',
    (overlay) => {
      const rules = rendered[overlay]
        .filter((o) => o.kind === 'NetworkPolicy')
        .flatMap((p) => p.spec.egress ?? [])
        .flatMap((e: any) => e.ports as { port: number; endPort?: number; protocol: string }[]);
      const open = (port: number, protocol = 'TCP') =>
        rules.some((r) => r.protocol === protocol && r.port <= port && port <= (r.endPort ?? r.port));
      expect(open(53, 'UDP') && open(53)).toBe(true);
      expect(open(443), 'the alert webhook (https)').toBe(true);
      const dependencies = [6379, 6380, 26379, 26380, 7000, 7005, 3306, 5432];
      if (overlay === 'fleet') for (const port of dependencies) expect(open(port), String(port)).toBe(true);
      else for (const port of dependencies) expect(open(port), String(port)).toBe(false);
      // A Cluster's bus (port + 10000) is between its nodes: no client dials it.
      expect(open(16379)).toBe(false);
    },
  );

  it('fleet: a PodDisruptionBudget that keeps all but one pod through a drain; embedded: none (one pod)', () => {
    expect(only(rendered.fleet, 'PodDisruptionBudget').spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: SELECTOR },
    });
    expect(only(rendered.fleet, 'HorizontalPodAutoscaler').spec.minReplicas - 1).toBeGreaterThanOrEqual(2);
    // With one pod a budget either protects nothing or blocks every drain of its node.
    expect(rendered.embedded.filter((o) => o.kind === 'PodDisruptionBudget')).toEqual([]);
  });

  it.each(OVERLAYS)("%s: the V8 heap sized from the container's memory limit", (overlay) => {
    const { container } = podOf(workloadOf(overlay)) as { container: any };
    const options = container.env.find((e: { name: string }) => e.name === 'NODE_OPTIONS')?.value as string;
    const percent = Number(/--max-old-space-size-percentage=(\d+)/.exec(options ?? '')?.[1]);
    // Room beside the heap for buffers and native memory, and a heap that uses most of what is paid for.
    expect(percent).toBeGreaterThanOrEqual(50);
    expect(percent).toBeLessThanOrEqual(80);
    expect(container.resources.limits.memory).toMatch(/^\d+(Mi|Gi)$/);
  });

  it('fleet: pods spread over zones and nodes, selected by this release only', () => {
    const { pod } = podOf(workloadOf('fleet'));
    const spread = (pod.topologySpreadConstraints ?? []) as {
      topologyKey: string;
      maxSkew: number;
      labelSelector: unknown;
    }[];
    expect(spread.map((c) => c.topologyKey)).toEqual(['topology.kubernetes.io/zone', 'kubernetes.io/hostname']);
    for (const c of spread) {
      expect(c.maxSkew).toBe(1);
      expect(c.labelSelector).toEqual({ matchLabels: SELECTOR });
    }
  });

  // Two Services matched would be two scrape jobs of the same pods: every
  // idpool metric twice, and every `by (job)` rule firing twice.
  it.each(OVERLAYS)('%s: the ServiceMonitor selects exactly one Service, so each pod is scraped once', (overlay) => {
    const { selector } = only(rendered[overlay], 'ServiceMonitor').spec;
    expect(selector.matchExpressions, 'selects() reads matchLabels only').toBeUndefined();
    // An empty selector would select every Service of the namespace.
    expect(Object.keys(selector.matchLabels ?? {})).not.toEqual([]);
    const matched = rendered[overlay]
      .filter((o) => o.kind === 'Service' && selects(selector.matchLabels, o.metadata.labels))
      .map((o) => o.metadata.name);
    expect(matched).toEqual(['idpool']);
  });

  it('embedded: one StatefulSet replica, its SQLite file and high-water file on the volume, the worker id from the pod', () => {
    const set = workloadOf('embedded');
    expect(set.spec.replicas).toBe(1);
    expect(rendered.embedded.filter((o) => o.kind === 'HorizontalPodAutoscaler')).toEqual([]);
    const { container } = podOf(set);
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    // The high-water file is written beside the SQLite file (src/segment/high-water.ts).
    expect(env.IDPOOL_DATABASE_URL).toBe('sqlite:/data/idpool.db');
    expect(container.volumeMounts).toContainEqual({ name: 'data', mountPath: '/data' });
    expect(set.spec.volumeClaimTemplates[0].spec.accessModes).toEqual(['ReadWriteOnce']);
    expect(env.IDPOOL_WORKER_ID).toBe('ordinal');
    expect(env.IDPOOL_REDIS_URL).toBeUndefined();
    // Its governing Service is headless.
    expect(only(rendered.embedded, 'Service', set.spec.serviceName).spec.clusterIP).toBe('None');
  });

  it('fleet: a Deployment whose replicas the HPA owns (three or more), rolled one surge at a time', () => {
    const deployment = workloadOf('fleet');
    // A `replicas` here would reset the HPA's count on every `kubectl apply -k`.
    expect(deployment.spec.replicas).toBeUndefined();
    expect(deployment.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    const hpa = only(rendered.fleet, 'HorizontalPodAutoscaler').spec;
    expect(hpa.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'idpool' });
    expect(hpa.minReplicas).toBe(3);
    expect(hpa.maxReplicas).toBeGreaterThan(3);
  });

  it.each(OVERLAYS)(
    '%s: the PrometheusRule is deploy/prometheus/idpool-rules.yml, the dashboard deploy/grafana',
    (overlay) => {
      const stale = 'stale copy: run `node scripts/kubernetes-assets.js`';
      const rules = parse(readFileSync(join(DEPLOY, 'prometheus', 'idpool-rules.yml'), 'utf8')) as { groups: unknown };
      expect(only(rendered[overlay], 'PrometheusRule').spec, stale).toEqual({ groups: rules.groups });
      const dashboard = only(rendered[overlay], 'ConfigMap', 'idpool-grafana-dashboard');
      expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
      expect(dashboard.data?.['idpool-dashboard.json'], stale).toBe(
        readFileSync(join(DEPLOY, 'grafana', 'idpool-dashboard.json'), 'utf8'),
      );
    },
  );
});
