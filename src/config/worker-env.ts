/**
 * The service's worker id: leased (default), fixed (`IDPOOL_WORKER_ID=N`, only with IDPOOL_WORKER_ID_UNSAFE), or the
 * StatefulSet pod's (`ordinal`, plus IDPOOL_WORKER_ID_OFFSET, leased; docs/kubernetes.md "Worker ids from the pod").
 */
import { ConfigError } from '../errors';
import type { PodWorker } from '../worker/pod-worker';
import { type EnvReader, quoted } from './env-reader';

/** A StatefulSet pod's name: `<statefulset>-<ordinal>`, as Kubernetes sets HOSTNAME. */
const POD_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?-(\d+)$/;

/** IDPOOL_WORKER_ID as a fixed number; undefined when unset or `ordinal`. */
export function fixedWorkerId(r: EnvReader, workerCap: number): number | undefined {
  if (r.raw('IDPOOL_WORKER_ID') === undefined || isOrdinal(r)) return undefined;
  return r.int('IDPOOL_WORKER_ID', 0, 0, workerCap);
}

/** The pod's ordinal from IDPOOL_POD_INDEX (the downward API's pod-index), else HOSTNAME's `-N`, plus the offset. */
export function podWorker(r: EnvReader, workerCap: number): PodWorker | undefined {
  if (!isOrdinal(r)) {
    if (r.raw('IDPOOL_WORKER_ID_OFFSET') !== undefined)
      throw new ConfigError('IDPOOL_WORKER_ID_OFFSET', 'is read only with IDPOOL_WORKER_ID=ordinal');
    return undefined;
  }
  const offset = r.int('IDPOOL_WORKER_ID_OFFSET', 0, 0, workerCap);
  const { ordinal, from } = podOrdinal(r, workerCap);
  const workerId = ordinal + offset;
  if (workerId > workerCap)
    throw new ConfigError(
      'IDPOOL_WORKER_ID_OFFSET',
      `${from} plus offset ${offset} is worker id ${workerId}, above the layout's highest, ${workerCap}`,
    );
  return { workerId, from: offset === 0 ? from : `${from} + IDPOOL_WORKER_ID_OFFSET ${offset}` };
}

const isOrdinal = (r: EnvReader) => r.raw('IDPOOL_WORKER_ID')?.trim().toLowerCase() === 'ordinal';

function podOrdinal(r: EnvReader, workerCap: number): { ordinal: number; from: string } {
  if (r.raw('IDPOOL_POD_INDEX') !== undefined) {
    const ordinal = r.int('IDPOOL_POD_INDEX', 0, 0, workerCap);
    return { ordinal, from: `IDPOOL_POD_INDEX ${ordinal}` };
  }
  const hostname = r.raw('HOSTNAME');
  const match = hostname === undefined ? null : POD_NAME.exec(hostname.trim());
  if (hostname === undefined || match === null)
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      `is "ordinal", which needs IDPOOL_POD_INDEX or a StatefulSet pod's HOSTNAME ending in -<ordinal> (idpool-3); HOSTNAME is ${hostname === undefined ? 'unset' : quoted(hostname)}`,
    );
  const ordinal = Number(match[2]);
  if (!Number.isSafeInteger(ordinal) || ordinal > workerCap)
    throw new ConfigError(
      'IDPOOL_WORKER_ID',
      `is "ordinal" but HOSTNAME ${quoted(hostname)} ends in ${match[2]}, above the layout's highest worker id, ${workerCap}`,
    );
  return { ordinal, from: `HOSTNAME ${hostname.trim()}` };
}
