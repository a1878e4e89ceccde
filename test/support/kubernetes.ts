/**
 * The Kubernetes manifests of deploy/kubernetes as Kubernetes would get
 * them: each overlay rendered by `kubectl kustomize` (offline, no cluster),
 * parsed into plain objects. Used by kubernetes-manifests.test.ts (schemas
 * and shape) and kubernetes-roll.test.ts (the fleet's Deployment run here).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const KUBERNETES_DIR = join(__dirname, '..', '..', 'deploy', 'kubernetes');
export const OVERLAYS = ['embedded', 'fleet'] as const;
export type Overlay = (typeof OVERLAYS)[number];

/** A rendered object; the fields the tests read are typed where they read them. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
  [field: string]: unknown;
}

/** `kubectl kustomize deploy/kubernetes/<overlay>`, every document parsed. */
export function renderOverlay(overlay: Overlay): KubeObject[] {
  const text = execFileSync('kubectl', ['kustomize', join(KUBERNETES_DIR, overlay)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseAllDocuments(text).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`kubectl kustomize ${overlay}: ${doc.errors[0].message}`);
    return doc.toJS() as KubeObject;
  });
}

/** The one object of `kind` (and `name`, when given) among `objects`; throws when there is not exactly one. */
export function only(objects: readonly KubeObject[], kind: string, name?: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0];
}

/** An env entry of a container: a value, or a reference the kubelet resolves. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    fieldRef?: { fieldPath: string };
  };
}

/** A probe as the tests read it (httpGet only: that is what the manifests use). */
export interface Probe {
  httpGet: { path: string; port: string | number };
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
  initialDelaySeconds?: number;
}

/** The fields of a container the tests read. */
export interface Container {
  name: string;
  image: string;
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  securityContext?: Record<string, any>;
  volumeMounts?: { name: string; mountPath: string }[];
}

/** The workload's pod template spec and its one container. */
export function podOf(workload: KubeObject): { pod: any; container: Container } {
  const pod = workload.spec.template.spec;
  const containers = pod.containers as Container[];
  if (containers.length !== 1) throw new Error(`expected one container, found ${containers.length}`);
  return { pod, container: containers[0] };
}
