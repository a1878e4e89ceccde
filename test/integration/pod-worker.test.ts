/**
 * IDPOOL_WORKER_ID=ordinal (docs/kubernetes.md, "Worker ids from the
 * pod"): real service processes on one MariaDB schema and the shared Redis
 * (the leases' second record), named as StatefulSet pods are. The pod's
 * number is leased, not trusted: a second process given it is refused while
 * the first holds it, and a pod restarted after `kill -9` takes it back once
 * the dead one's lease lapses.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type Instance, runToExit, startInstance } from '../support/processes';
import { type TestSchema, createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

/** TTL 3 s, heartbeat 1 s: a second pod is refused after about 4 s of waiting. */
const FAST_LEASE = {
  IDPOOL_WORKER_LEASE_TTL_MS: '3000',
  IDPOOL_WORKER_LEASE_MARGIN_MS: '1000',
  IDPOOL_WORKER_HEARTBEAT_SECONDS: '1',
};

describeWithServices('worker id from the pod: IDPOOL_WORKER_ID=ordinal', { mysql: true, redis: true }, () => {
  let schema: TestSchema;
  let env: Record<string, string>;
  let first: Instance | undefined;
  let secret: string;

  beforeAll(async () => {
    schema = await createTestSchema();
    env = {
      IDPOOL_DATABASE_URL: schema.url,
      ...sharedRedisEnv(),
      ...FAST_LEASE,
      IDPOOL_WORKER_ID: 'ordinal',
      HOSTNAME: 'idpool-3',
      IDPOOL_WORKER_ID_OFFSET: '10',
    };
    first = await startInstance(env);
    secret = await register(first.url, { key: 'pod-sf', mode: 'snowflake', maxSizePerSecond: 0 });
  });
  afterAll(async () => {
    await first?.kill9();
    await schema.drop();
  });

  async function workerOf(instance: Instance): Promise<number> {
    const res = await takeIds(instance.url, 'pod-sf', secret, 1);
    expect(res.status).toBe(200);
    const decoded = await call(`${instance.url}/apps/pod-sf/ids/${res.body.ids[0]}`, { token: secret });
    return decoded.body.worker as number;
  }

  it('idpool-3 with offset 10 holds worker 13, as a lease in the worker table', async () => {
    if (!first) throw new Error('no first instance');
    expect(await workerOf(first)).toBe(13);
    const workers = await call(`${first.url}/admin/workers`, { token: ADMIN_TOKEN });
    expect(workers.body.workers).toEqual([expect.objectContaining({ workerId: 13, live: true, self: true })]);
  });

  it('a second process given the same number is refused (exit 2, one line naming it) while the first goes on', async () => {
    if (!first) throw new Error('no first instance');
    const began = Date.now();
    const second = await runToExit(env, 30_000);
    expect(second.code).toBe(2);
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(second.stderr).toMatch(
      /^idpool: invalid configuration: IDPOOL_WORKER_ID: worker id 13 \(HOSTNAME idpool-3 \+ IDPOOL_WORKER_ID_OFFSET 10\) is leased by a live instance/,
    );
    // It waited out one TTL and a heartbeat (the first renewed throughout) before refusing.
    expect(Date.now() - began).toBeGreaterThanOrEqual(4000);
    expect(await workerOf(first)).toBe(13);
  }, 60_000);

  it('after kill -9 the restarted pod takes its number back once the lease lapses, above every id it issued', async () => {
    if (!first) throw new Error('no first instance');
    const before = await takeIds(first.url, 'pod-sf', secret, 100);
    await first.kill9();
    first = await startInstance(env, 30_000);
    const after = await takeIds(first.url, 'pod-sf', secret, 1);
    expect(after.status).toBe(200);
    expect(BigInt(after.body.ids[0])).toBeGreaterThan(BigInt(before.body.ids.at(-1) ?? '0'));
    expect(await workerOf(first)).toBe(13);
  }, 60_000);
});
