import { describe, expect, it } from 'vitest';
import type { EntityConfig } from '../../src/entities/entity';
import type { Clock } from '../../src/clock';
import { type AlarmWebhookPayload, Alarms } from '../../src/ops/alarms';
import { OpsMetrics } from '../../src/ops/metrics';
import { OpsSampler } from '../../src/ops/sampler';
import { silentLogger } from '../../src/logger';

function fakeClock(): Clock & { advance(ms: number): void } {
  let now = Date.parse('2030-01-01T00:00:00Z');
  return { now: () => now, monotonic: () => now, sleep: async (ms) => void (now += ms), advance: (ms) => void (now += ms) };
}

const app = (key: string, over: Partial<EntityConfig> = {}): EntityConfig => ({
  key,
  name: key,
  mode: 'monotonic',
  startOffset: 0n,
  step: 100,
  maxSizePerTimes: 100,
  maxSizePerSecond: 0,
  minSizePercent: 80,
  maxPoolSize: 1000,
  interval: 100,
  secretHash: '',
  createTime: 0,
  updateTime: 0,
  ...over,
});

function setup(opts: { lease?: { held: boolean; inUse: number; total: number }; snowflakeEndsInDays?: number } = {}) {
  const clock = fakeClock();
  const apps = new Map<string, EntityConfig>();
  const sizes = new Map<string, number>();
  const offsets = new Map<string, bigint>();
  const sent: AlarmWebhookPayload[] = [];
  const metrics = new OpsMetrics({ defaultMetrics: false });
  const alarms = new Alarms({ clock, log: silentLogger, dedupeMs: 600_000, instance: 't', sink: { send: async (p) => void sent.push(p) } });
  const lease = opts.lease;
  const reads: number[] = [];
  const sampler = new OpsSampler({
    apps: { list: () => [...apps.values()] },
    pools: {
      sizes: async (keys) => {
        reads.push(keys.length);
        return keys.map((k) => sizes.get(k) ?? 0);
      },
    },
    // The ceiling as target: these tests are about sampling, not demand.
    sizing: { target: (app) => app.maxPoolSize, lowWatermark: (app) => Math.floor((app.maxPoolSize * app.minSizePercent) / 100) },
    offsets: { peekMany: async (keys) => new Map([...offsets].filter(([k]) => keys.includes(k))) },
    cluster: { toId: (n) => n, count: 1 },
    metrics,
    alarms,
    clock,
    log: silentLogger,
    lease: lease && { status: () => ({ workerId: 3, held: lease.held, expiresAt: clock.now() + 15_000 }), usage: async () => ({ inUse: lease.inUse, total: lease.total }) },
    snowflake: opts.snowflakeEndsInDays === undefined ? undefined : () => ({ timeExhaustedAt: clock.now() + opts.snowflakeEndsInDays! * 86_400_000, jsSafeLimitAt: undefined }),
    sampleMs: 1000,
    rateWindowMs: 60_000,
    chartRateWindowMs: 5000,
    historyMs: 60_000,
    horizonSeconds: 30 * 86_400,
    poolDrySeconds: 10,
    poolLowPercent: 50,
    workerRangePercent: 90,
  });
  const tick = async () => {
    clock.advance(1000);
    await sampler.sampleOnce();
    await alarms.flush();
  };
  return { clock, apps, sizes, offsets, sent, metrics, alarms, sampler, tick, reads };
}

describe('OpsSampler conditions', () => {
  it('does not call a new, still-filling pool low; does once it has filled and then stays low', async () => {
    const s = setup();
    s.apps.set('a', app('a'));
    s.offsets.set('a', 0n);
    s.sizes.set('a', 0);
    for (let i = 0; i < 5; i++) await s.tick();
    expect(s.sent).toEqual([]);
    s.offsets.set('a', 1000n);
    s.sizes.set('a', 1000);
    await s.tick();
    // Refills stop (database down): 100 left, below half the watermark of 800, for two samples.
    s.sizes.set('a', 100);
    await s.tick();
    expect(s.sent).toEqual([]);
    await s.tick();
    expect(s.sent.map((p) => p.alarm)).toContain('pool_low');
    expect(s.alarms.activeAlarms().map((a) => a.name)).toContain('pool_low');
    s.sizes.set('a', 900);
    await s.tick();
    expect(s.alarms.activeAlarms().map((a) => a.name)).not.toContain('pool_low');
  });

  it('forecasts the 63-bit end within the horizon as critical, and forgets a retired entity', async () => {
    const s = setup();
    const start = 2n ** 63n - 1_000_000_000n;
    s.apps.set('b', app('b', { startOffset: start, maxPoolSize: 10_000, step: 1000 }));
    s.offsets.set('b', start + 10_000n);
    s.sizes.set('b', 10_000);
    await s.tick();
    // 1000 taken a second: ~10^9 numbers left is ~11.6 days.
    for (let i = 1; i <= 3; i++) {
      s.offsets.set('b', start + 10_000n + BigInt(i * 1000));
      await s.tick();
    }
    const sent = s.sent.find((p) => p.alarm === 'forecast_int63_limit')!;
    expect(sent).toMatchObject({ severity: 'critical', entityKey: 'b' });
    expect(sent.details.seconds as number).toBeGreaterThan(10 * 86_400);
    expect(sent.details.seconds as number).toBeLessThan(12 * 86_400);
    // Started above 2^53: no JS-number alarm for it.
    expect(s.sent.some((p) => p.alarm === 'forecast_js_safe_limit')).toBe(false);
    expect(await s.metrics.registry.getSingleMetricAsString('idpool_take_rate_ids_per_second')).toContain('{entity="b"} 1000');

    s.apps.delete('b');
    await s.tick();
    expect(s.alarms.activeAlarms()).toEqual([]);
    expect(await s.metrics.registry.getSingleMetricAsString('idpool_pool_size')).not.toContain('entity="b"');
    expect(s.sampler.overview()).toEqual([]);
  });

  it('raises lease_lost and worker_range_nearly_full from the lease view', async () => {
    const s = setup({ lease: { held: false, inUse: 29, total: 31 } });
    await s.tick();
    expect(s.sent.map((p) => p.alarm).sort()).toEqual(['lease_lost', 'worker_range_nearly_full']);
    expect(s.sent.find((p) => p.alarm === 'lease_lost')!.severity).toBe('critical');
    expect(await s.metrics.registry.getSingleMetricAsString('idpool_worker_lease_held')).toContain('idpool_worker_lease_held 0');
  });

  it('warns when the snowflake layout runs out of timestamp bits within the horizon, not before', async () => {
    const far = setup({ snowflakeEndsInDays: 400 });
    await far.tick();
    expect(far.sent).toEqual([]);
    const near = setup({ snowflakeEndsInDays: 20 });
    await near.tick();
    expect(near.sent.map((p) => p.alarm)).toEqual(['forecast_snowflake_time_exhausted']);
  });
});

describe('OpsSampler cost', () => {
  it('reads at most 1,000 pools per run however many entities exist, and covers them all in turn', async () => {
    const s = setup();
    for (let i = 0; i < 2500; i++) {
      const key = `e${String(i).padStart(4, '0')}`;
      s.apps.set(key, app(key));
      s.offsets.set(key, 1000n);
      s.sizes.set(key, 1000);
    }
    for (let run = 0; run < 3; run++) await s.tick();
    expect(s.reads).toEqual([1000, 1000, 500]);
    const overview = s.sampler.overview();
    expect(overview).toHaveLength(2500);
    expect(overview.every((e) => e.pool.size === 1000)).toBe(true);
    // An entity retired while not in the current batch is forgotten all the same.
    s.apps.delete('e0001');
    await s.tick();
    expect(s.sampler.overview().some((e) => e.key === 'e0001')).toBe(false);
  });
});
