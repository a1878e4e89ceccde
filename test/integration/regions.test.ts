import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type PrivateDeployment, privateDeployment } from '../support/private-deployment';
import type { Instance } from '../support/processes';

/**
 * Issue 36 item 4, docs/scaling.md "Regions": two deployments, each on its
 * own redis-server and database, set up by the recipe (stride 2, index and
 * region 0 and 1, one region bit), with the same entities registered in
 * both: a segment entity and a snowflake entity. Both lease worker 1 from
 * their own databases; no id is issued by both, and decode and the
 * dashboard's data (`GET /admin/ops`) name the region.
 */

const KEYS = { segment: 'orders', snowflake: 'events' };
const TAKES = 20;
const BATCH = 50;

describeWithServices('two regions on their own Redis and database', { mysql: true }, () => {
  const deployments: PrivateDeployment[] = [];
  const regions: { deployment: PrivateDeployment; instance: Instance; secrets: Record<string, string> }[] = [];

  beforeAll(async () => {
    for (const region of [0, 1]) {
      const deployment = await privateDeployment();
      deployments.push(deployment);
      const instance = await deployment.start(
        {
          IDPOOL_CLUSTER_COUNT: '2',
          IDPOOL_CLUSTER_INDEX: String(region),
          IDPOOL_SNOWFLAKE_REGION_BITS: '1',
          IDPOOL_REGION: String(region),
        },
        120_000,
      );
      const secrets = {
        segment: await register(instance.url, { key: KEYS.segment, step: 100 }),
        snowflake: await register(instance.url, { key: KEYS.snowflake, mode: 'snowflake' }),
      };
      regions.push({ deployment, instance, secrets });
    }
  }, 240_000);

  afterAll(async () => {
    await Promise.all(deployments.map((d) => d.stop()));
  });

  it('issues disjoint segment and snowflake ids, and decode names the region', async () => {
    const issued = await Promise.all(
      regions.map(async (r) => {
        const ids = { segment: [] as string[], snowflake: [] as string[] };
        for (let i = 0; i < TAKES; i++) {
          for (const kind of ['segment', 'snowflake'] as const) {
            const res = await takeIds(r.instance.url, KEYS[kind], r.secrets[kind], BATCH);
            expect(res.status, JSON.stringify(res.body)).toBe(200);
            ids[kind].push(...res.body.ids);
          }
        }
        return ids;
      }),
    );
    for (const kind of ['segment', 'snowflake'] as const) {
      const [a, b] = issued.map((ids) => ids[kind]);
      expect(a).toHaveLength(TAKES * BATCH);
      const inBoth = a.filter((id) => new Set(b).has(id));
      expect(inBoth, `${kind} ids issued by both regions`).toEqual([]);
    }
    // Segment ids by the stride: region 0 the even ones, region 1 the odd ones.
    expect(issued[0].segment.every((id) => BigInt(id) % 2n === 0n)).toBe(true);
    expect(issued[1].segment.every((id) => BigInt(id) % 2n === 1n)).toBe(true);
    for (const [region, r] of regions.entries()) {
      const decoded = await call(`${r.instance.url}/apps/${KEYS.snowflake}/ids/${issued[region].snowflake[0]}`, {
        token: r.secrets.snowflake,
      });
      expect(decoded.status).toBe(200);
      expect(decoded.body).toMatchObject({ region, worker: 1 });
      // Either region decodes the other's ids: the layout is the same.
      const other = regions[1 - region];
      const across = await call(`${other.instance.url}/apps/${KEYS.snowflake}/ids/${issued[region].snowflake[0]}`, {
        token: other.secrets.snowflake,
      });
      expect(across.body).toMatchObject({ region, worker: 1 });
      // The dashboard's data names the deployment's region (its page: dashboard.test.ts).
      const ops = await call(`${r.instance.url}/admin/ops`, { token: ADMIN_TOKEN });
      expect(ops.status).toBe(200);
      expect(ops.body.snowflake).toMatchObject({ region });
    }
  });
});
