import { expect, it } from 'vitest';
import { ADMIN_TOKEN, type JsonResponse, call, register } from '../support/http';
import { describeWithServices } from '../support/describe-with-services';
import { suiteInstances } from '../support/suite-instances';

describeWithServices('GET /admin/apps is paged (MariaDB + Redis)', { mysql: true, redis: true }, () => {
  const run = suiteInstances((base) => ({ instance: base }), { privateRedis: true });
  const admin = { token: ADMIN_TOKEN };

  it('walks every live entity once, in key order, with pool and offset, and refuses bad limit/after with 400', async () => {
    // Registered out of order, one snowflake among them, one retired.
    const keys = Array.from({ length: 25 }, (_, i) => `page-${String((i * 7) % 25).padStart(2, '0')}`);
    for (const key of keys) {
      // A snowflake entity takes no pool fields (400 naming the field).
      const body =
        key === 'page-03'
          ? { key, mode: 'snowflake', maxSizePerTimes: 50, maxSizePerSecond: 0 }
          : { key, step: 10, maxPoolSize: 100, maxSizePerTimes: 50, maxSizePerSecond: 0, startOffset: 500 };
      await register(run.instance.url, body);
    }
    expect((await call(`${run.instance.url}/admin/apps/page-10`, { ...admin, method: 'DELETE' })).status).toBe(204);
    const live = keys.filter((k) => k !== 'page-10').sort();

    const seen: Record<string, any>[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const res: JsonResponse<{ apps: Record<string, any>[]; next: string | null }> = await call(
        `${run.instance.url}/admin/apps?limit=10${after ? `&after=${after}` : ''}`,
        admin,
      );
      expect(res.status).toBe(200);
      expect(res.body.apps.length).toBeLessThanOrEqual(10);
      seen.push(...res.body.apps);
      after = res.body.next;
      pages++;
    } while (after !== null);
    expect(pages).toBe(3);
    expect(seen.map((a) => a.key)).toEqual(live);
    const flake = seen.find((a) => a.key === 'page-03')!;
    expect(flake.pool).toBeUndefined();
    const pooled = seen.find((a) => a.key === 'page-00')!;
    // Idle: one floor, max(step 10, maxSizePerTimes 50), below the ceiling of 100.
    expect(pooled.pool).toMatchObject({ target: 50, max: 100, lowWatermark: 40 });
    expect(typeof pooled.pool.size).toBe('number');
    expect(BigInt(pooled.currentOffset)).toBeGreaterThanOrEqual(500n);

    // Default page size is 100; `after` need not be a registered key.
    const all = await call(`${run.instance.url}/admin/apps`, admin);
    expect(all.body.apps).toHaveLength(live.length);
    expect(all.body.next).toBeNull();
    const fromGap = await call(`${run.instance.url}/admin/apps?after=page-095&limit=2`, admin);
    expect(fromGap.body.apps.map((a: { key: string }) => a.key)).toEqual(['page-11', 'page-12']);
    expect(fromGap.body.next).toBe('page-12');
    const past = await call(`${run.instance.url}/admin/apps?after=zzz`, admin);
    expect(past.body).toEqual({ apps: [], next: null });

    for (const query of [
      'limit=0',
      'limit=1001',
      'limit=-1',
      'limit=abc',
      'limit=1.5',
      'limit=1&limit=2',
      'after=bad%20key',
      `after=${'x'.repeat(65)}`,
      'after=a&after=b',
    ]) {
      const res = await call(`${run.instance.url}/admin/apps?${query}`, admin);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code, query).toBe('invalid_request');
    }
    expect((await call(`${run.instance.url}/admin/apps?limit=1000`, admin)).status).toBe(200);
  });
});
