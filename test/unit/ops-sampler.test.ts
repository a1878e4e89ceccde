import { IdStride } from '../../src/segment/stride';
import { describe, expect, it } from 'vitest';
import type { EntityConfig } from '../../src/entities/entity';
import { type AlarmWebhookPayload, Alarms } from '../../src/ops/alarms';
import { OpsMetrics } from '../../src/ops/metrics';
import { OpsSampler, SamplerFeed } from '../../src/ops/sampler';
import { silentLogger } from '../../src/logger';
import { FakeClock } from '../support/clock';
import { entityConfig } from '../support/entity';
import { SAMPLER_SETTINGS } from '../support/sampler';

const entity = (key: string, over: Partial<EntityConfig> = {}): EntityConfig =>
  entityConfig({ key, maxSizePerTimes: 100, ...over });

/** A logger that keeps its warn/error lines. */
function capturingLogger() {
  const lines: { level: string; obj: Record<string, unknown>; msg?: string }[] = [];
  const logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (obj: object, msg?: string) => void lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    error: (obj: object, msg?: string) => void lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg }),
    child: () => logger,
  };
  return { logger, lines };
}

function setup(opts: { lease?: { held: boolean; inUse: number; total: number }; snowflakeEndsInDays?: number } = {}) {
  const clock = new FakeClock({ now: Date.parse('2030-01-01T00:00:00Z'), sleep: 'advance' });
  const entities = new Map<string, EntityConfig>();
  /** A size, or the error reading that entity's pool answers. */
  const sizes = new Map<string, number | Error>();
  /**
   * Ids taken so far per entity (Redis's pushed counter less the size); unset, as a pool whose every
   * reservation is pushed: the numbers reserved from the entity's start less the size.
   */
  const taken = new Map<string, number>();
  const log = capturingLogger();
  const offsets = new Map<string, bigint>();
  const sent: AlarmWebhookPayload[] = [];
  const metrics = new OpsMetrics({ defaultMetrics: false, nowMs: () => clock.now() });
  const alarms = new Alarms({
    clock,
    log: silentLogger,
    alertDedupeMs: 600_000,
    instance: 't',
    sink: { send: async (p) => void sent.push(p) },
  });
  const lease = opts.lease;
  const reads: number[] = [];
  /** Takes the dispatcher refused per entity, for too few ids ready. */
  const refused = new Map<string, number>();
  const registry = { list: () => [...entities.values()], get: (key: string) => entities.get(key) };
  /** What the ops events tell the sampler: takes served, the sweep's reads. */
  const feed = new SamplerFeed({ entities: registry, clock, sampleMs: SAMPLER_SETTINGS.sampleMs });
  const sampler = new OpsSampler({
    entities: registry,
    feed,
    refused: (key) => refused.get(key) ?? 0,
    poolStore: {
      levels: async (keys) => {
        reads.push(keys.length);
        return keys.map((k) => {
          const size = sizes.get(k) ?? 0;
          if (size instanceof Error) return size;
          const reserved = Number((offsets.get(k) ?? 0n) - (entities.get(k)?.startOffset ?? 0n));
          return { size, taken: taken.get(k) ?? reserved - size };
        });
      },
    },
    // The ceiling as target: these tests are about sampling, not demand.
    demand: {
      target: (entity) => entity.maxPoolSize,
      lowWatermark: (entity) => Math.floor((entity.maxPoolSize * entity.minSizePercent) / 100),
      sizing: (entity) => ({
        target: entity.maxPoolSize,
        lowWatermark: Math.floor((entity.maxPoolSize * entity.minSizePercent) / 100),
        max: entity.maxPoolSize,
      }),
    },
    allocator: { peekMany: async (keys) => new Map([...offsets].filter(([k]) => keys.includes(k))) },
    stride: new IdStride(),
    metrics,
    alarms,
    clock,
    log: log.logger,
    lease: lease && {
      status: () => ({ workerId: 3, held: lease.held, expiresAt: clock.now() + 15_000 }),
      usage: async () => ({ inUse: lease.inUse, total: lease.total }),
    },
    snowflake:
      opts.snowflakeEndsInDays === undefined
        ? undefined
        : () => ({ timeExhaustedAt: clock.now() + opts.snowflakeEndsInDays! * 86_400_000, jsSafeLimitAt: undefined }),
    ...SAMPLER_SETTINGS,
  });
  const tick = async () => {
    clock.advance(1000);
    await sampler.sampleOnce();
    await alarms.flush();
  };
  return {
    clock,
    entities,
    sizes,
    taken,
    offsets,
    refused,
    sent,
    metrics,
    alarms,
    sampler,
    feed,
    tick,
    reads,
    lines: log.lines,
  };
}

describe('OpsSampler take rates', () => {
  /** Entity `a`'s offset, pool size and take counter as the next sample reads them; then that sample. */
  async function pool(s: ReturnType<typeof setup>, offset: bigint, size: number, taken: number) {
    s.offsets.set('a', offset);
    s.sizes.set('a', size);
    s.taken.set('a', taken);
    await s.tick();
  }

  it("reads the take rate from the pool's take counter, exact while a refill is reserved but not pushed", async () => {
    const s = setup();
    s.entities.set('a', entity('a', { maxPoolSize: 2000, step: 1000 }));
    await pool(s, 2000n, 2000, 0);
    // 100 ids a second for 3 s; at the third sample a refill has reserved 1,000 more, not pushed yet
    // (reserved − growth would read (1,000 + 300) / 3 s: forecast.test.ts, the fallback across a reset).
    for (const t of [1, 2, 3]) await pool(s, t === 3 ? 3000n : 2000n, 2000 - 100 * t, 100 * t);
    expect(s.sampler.forecast('a')!.takePerSecond).toBe(100);
  });

  it('falls back to the estimate across a pool reset (the counter starts again)', async () => {
    const s = setup();
    s.entities.set('a', entity('a', { maxPoolSize: 2000, step: 1000 }));
    await pool(s, 2000n, 2000, 5000);
    // A Redis server change: the pool is reset and refilled, its counter counts from 0 again.
    await pool(s, 4000n, 1900, 100);
    // Reserved 2,000, pool shrank by 100: 2,100 by the estimate, not a negative count.
    expect(s.sampler.forecast('a')!.takePerSecond).toBe(2100);
  });
});

describe('OpsSampler conditions', () => {
  it('does not call a new, still-filling pool low; does once it has filled and then stays low', async () => {
    const s = setup();
    s.entities.set('a', entity('a'));
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
    s.entities.set('b', entity('b', { startOffset: start, maxPoolSize: 10_000, step: 1000 }));
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
    expect(await s.metrics.registry.getSingleMetricAsString('idpool_take_rate_ids_per_second')).toContain(
      '{entity="b"} 1000',
    );

    s.entities.delete('b');
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
    expect(await s.metrics.registry.getSingleMetricAsString('idpool_worker_lease_held')).toContain(
      'idpool_worker_lease_held 0',
    );
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
  it('reads 200 idle pools per run, going round, and every active one each run', async () => {
    const s = setup();
    for (let i = 0; i < 2500; i++) {
      const key = `e${String(i).padStart(4, '0')}`;
      s.entities.set(key, entity(key));
      s.offsets.set(key, 1000n);
      s.sizes.set(key, 1000);
    }
    // A round of 2,500 idle entities: 13 runs of 200 (the last one 100).
    for (let run = 0; run < 13; run++) await s.tick();
    expect(s.reads).toEqual([...Array(12).fill(200), 100]);
    const overview = s.sampler.overview();
    expect(overview).toHaveLength(2500);
    expect(overview.every((e) => e.pool.size === 1000)).toBe(true);
    expect(s.sampler.health()).toMatchObject({ roundSeconds: 13 });

    // e0000's pool moves (direct pops): seen at its next read, then read every run.
    // e2000 serves a request here (touch): read from the next run on.
    s.sizes.set('e0000', 900);
    s.feed.round.touch('e2000');
    s.reads.length = 0;
    await s.tick(); // round 2, run 1: e0000..e0199, and e2000
    expect(s.reads).toEqual([201]);
    s.sizes.set('e0000', 800);
    await s.tick(); // e0200..e0399, e0000 and e2000
    expect(s.reads).toEqual([201, 202]);
    expect(s.sampler.overview().find((e) => e.key === 'e0000')!.pool.size).toBe(800);

    // An entity retired mid-round is forgotten when the next round starts.
    s.entities.delete('e0001');
    for (let run = 0; run < 12; run++) await s.tick();
    expect(s.sampler.overview().some((e) => e.key === 'e0001')).toBe(false);
  });
});

describe('OpsSampler at rest: idle cost follows activity', () => {
  const historyOf = (s: ReturnType<typeof setup>, key: string) =>
    s.sampler.overview().find((e) => e.key === key)!.history.length;

  it('an idle entity whose figures stand is not recorded again: its history stops, its sample age does not', async () => {
    const s = setup();
    for (const key of ['quiet', 'moving']) {
      s.entities.set(key, entity(key));
      s.offsets.set(key, 1000n);
      s.sizes.set(key, 1000);
    }
    for (let i = 0; i < 5; i++) await s.tick();
    const rest = historyOf(s, 'quiet');
    expect(rest).toBeLessThan(5);
    // `moving` reserves (a library beside the service, say): recorded every run from then on.
    for (let t = 1; t <= 5; t++) {
      s.offsets.set('moving', 1000n + BigInt(t * 100));
      await s.tick();
    }
    expect(historyOf(s, 'quiet')).toBe(rest);
    expect(historyOf(s, 'moving')).toBe(rest + 5);
    expect(s.metrics.sampleAge.values.get('quiet')).toBe(s.clock.now());
    expect(s.sampler.health()).toMatchObject({ ok: true, staleEntities: 0 });
    // Its pool moves (a direct pop): recorded again.
    s.sizes.set('quiet', 990);
    await s.tick();
    expect(historyOf(s, 'quiet')).toBe(rest + 1);
  });

  it('once the refill sweep feeds it, samples the pools the sweep read without reading them again', async () => {
    const s = setup();
    for (let i = 0; i < 500; i++) {
      const key = `e${String(i).padStart(4, '0')}`;
      s.entities.set(key, entity(key));
      s.offsets.set(key, 1000n);
      s.sizes.set(key, 1000);
    }
    await s.tick(); // not fed yet: its own round, 200 pools read
    expect(s.reads).toEqual([200]);
    // Read by the sweep half a second before this sampler runs: the sample is dated by that read.
    const sweptAt = s.clock.now() + 500;
    s.feed.offer(
      new Map([
        ['e0300', { size: 1000, taken: 0 }],
        ['e0301', { size: 990, taken: 10 }],
      ]),
      7000,
      sweptAt,
    );
    s.reads.length = 0;
    await s.tick();
    expect(s.reads).toEqual([0]);
    const age = s.metrics.sampleAge.values;
    expect([age.get('e0300'), age.get('e0301'), age.get('e0302')]).toEqual([sweptAt, sweptAt, undefined]);
    expect(s.sampler.overview().find((e) => e.key === 'e0301')!.pool.size).toBe(990);
    expect(s.sampler.health()).toMatchObject({ roundSeconds: 7 });
    // An entity served here, which the sweep did not read this time: the sampler reads it itself.
    s.feed.round.touch('e0400');
    s.reads.length = 0;
    await s.tick();
    expect(s.reads).toEqual([1]);
    expect(age.get('e0400')).toBe(s.clock.now());
    // A sweep's read older than the sample the sampler has (fed after the sampler read the pool
    // itself) is dropped: the newer sample stands, as does its date.
    s.feed.offer(new Map([['e0400', { size: 5, taken: 995 }]]), 7000, s.clock.now() - 100);
    const sampledAt = age.get('e0400');
    await s.tick();
    expect(age.get('e0400')).toBe(sampledAt);
    expect(s.sampler.overview().find((e) => e.key === 'e0400')!.pool.size).toBe(1000);
  });

  it("never dates an entity's sample back: a sweep's older read is dropped though the newer sample was not recorded", async () => {
    const s = setup();
    s.entities.set('quiet', entity('quiet'));
    s.offsets.set('quiet', 1000n);
    s.sizes.set('quiet', 1000);
    for (let i = 0; i < 5; i++) await s.tick();
    // At rest: its last runs only dated it, after the last sample its history recorded.
    const recorded = historyOf(s, 'quiet');
    const dated = s.metrics.sampleAge.values.get('quiet')!;
    expect(dated).toBe(s.clock.now());
    s.feed.offer(new Map([['quiet', { size: 1000, taken: 0 }]]), 1000, dated - 500);
    await s.tick();
    expect(s.metrics.sampleAge.values.get('quiet')).toBe(dated);
    expect(historyOf(s, 'quiet')).toBe(recorded);
  });

  it('keeps recording an idle entity while an alarm condition holds, so the alarm is raised', async () => {
    const s = setup();
    // Issued past 2^53 already, nothing moving: forecast_js_safe_limit holds now, confirmed over two samples.
    s.entities.set('past', entity('past'));
    s.offsets.set('past', 2n ** 53n + 1000n);
    s.sizes.set('past', 1000);
    for (let i = 0; i < 4; i++) await s.tick();
    expect(s.alarms.recent().map((a) => a.name)).toContain('forecast_js_safe_limit');
    expect(historyOf(s, 'past')).toBe(4);
  });
});

describe('OpsSampler over a fleet: one entity never stops the others', () => {
  /** Twelve entities, each taking `rate(i)` ids a second for `seconds`. */
  async function fleet(s: ReturnType<typeof setup>, seconds: number, rate: (i: number) => number) {
    const keys = Array.from({ length: 12 }, (_, i) => `e${String(i).padStart(2, '0')}`);
    for (const key of keys) {
      s.entities.set(key, entity(key, { maxPoolSize: 600_000, step: 1000 }));
      s.offsets.set(key, 500_000n);
      s.sizes.set(key, 500_000);
    }
    for (let t = 1; t <= seconds; t++) {
      keys.forEach((key, i) => s.offsets.set(key, 500_000n + BigInt(t * rate(i))));
      await s.tick();
    }
    return keys;
  }

  it('samples every entity when a busy one forecasts 2^63 beyond the last JavaScript date', async () => {
    const s = setup();
    // Entity 1 takes 3,000 ids/s: 2^63 in ~97 million years, past year 275760.
    const keys = await fleet(s, 5, (i) => (i === 1 ? 3000 : 100 + i));
    const rows = s.sampler.overview();
    expect(rows.map((r) => r.key)).toEqual(keys);
    for (const [i, row] of rows.entries()) {
      expect(row.pool.size).toBe(500_000);
      expect(row.stale).toBe(false);
      expect(row.takePerSecond).toBe(i === 1 ? 3000 : 100 + i);
      expect(row.forecast.int63LimitSeconds).toBeGreaterThan(0);
    }
    const ages = await s.metrics.registry.getSingleMetricAsString('idpool_ops_sample_age_seconds');
    for (const key of keys) expect(ages).toContain(`idpool_ops_sample_age_seconds{entity="${key}"} 0`);
    expect(s.lines).toEqual([]);
    expect(s.sampler.health()).toMatchObject({ ok: true, staleEntities: 0 });
  });

  it('reports a date past year 275760 as never instead of failing', async () => {
    const s = setup();
    // 2^63 within a 1e20-day horizon, at a rate whose date no Date can hold.
    const start = 2n ** 62n;
    s.entities.set('far', entity('far', { startOffset: start, maxPoolSize: 1_000_000, step: 1000 }));
    s.offsets.set('far', start);
    s.sizes.set('far', 500_000);
    await s.tick();
    s.offsets.set('far', start + 1000n);
    await s.tick();
    s.offsets.set('far', start + 2000n);
    await s.tick();
    expect(s.lines).toEqual([]);
    expect(s.sampler.forecast('far')!.int63Seconds).toBeGreaterThan(1e13);
  });

  it('logs a failing entity with its key, samples the rest, and marks the failing row stale with a growing age', async () => {
    const s = setup();
    const keys = await fleet(s, 3, () => 200);
    s.sizes.set('e04', new Error('WRONGTYPE Operation against a key holding the wrong kind of value'));
    for (let t = 0; t < 4; t++) {
      keys.forEach((key) => s.offsets.set(key, s.offsets.get(key)! + 200n));
      await s.tick();
    }
    expect(s.lines).toHaveLength(1);
    expect(s.lines[0]).toMatchObject({
      level: 'warn',
      obj: { entityKey: 'e04', err: expect.stringContaining('WRONGTYPE') },
    });
    const rows = new Map(s.sampler.overview().map((r) => [r.key, r]));
    expect(rows.get('e04')!.stale).toBe(true);
    for (const key of keys.filter((k) => k !== 'e04')) {
      expect(rows.get(key)!.stale).toBe(false);
      expect(rows.get(key)!.sampledAt).toBe(s.clock.now());
    }
    const ages = await s.metrics.registry.getSingleMetricAsString('idpool_ops_sample_age_seconds');
    expect(ages).toContain('idpool_ops_sample_age_seconds{entity="e04"} 4');
    expect(ages).toContain('idpool_ops_sample_age_seconds{entity="e05"} 0');
    expect(await s.metrics.registry.getSingleMetricAsString('idpool_ops_sample_age_max_seconds')).toContain(
      'idpool_ops_sample_age_max_seconds 4',
    );
    expect(await s.metrics.registry.getSingleMetricAsString('idpool_ops_sample_failures_total')).toContain(
      '{entity="e04"} 4',
    );
    expect(s.sampler.health()).toMatchObject({
      ok: false,
      staleEntities: 1,
      oldestSampleAgeSeconds: 4,
      roundSeconds: 1,
    });

    // It recovers: fresh again, and the next failure of another entity is logged at once.
    s.sizes.set('e04', 500_000);
    s.sizes.set('e07', Number.NaN);
    await s.tick();
    expect(s.sampler.overview().find((r) => r.key === 'e04')!.stale).toBe(false);
    expect(s.lines.at(-1)).toMatchObject({ obj: { entityKey: 'e07' } });
  });

  it('counts a never-sampled entity from sampling start, or, registered since, from when it was first looked at', async () => {
    const s = setup();
    s.sampler.start();
    await s.sampler.stop(); // sampling started (and stalls, as a sampler that stopped running would)
    const staleAfterMs = 3 * SAMPLER_SETTINGS.sampleMs; // two rounds of one run, and a run
    s.entities.set('old', entity('old', { createTime: 0 }));
    s.clock.advance(staleAfterMs + 1);
    expect(s.sampler.health()).toMatchObject({ ok: false, staleEntities: 1 });

    // Registered now: not stale before its first round could have come.
    s.entities.set('new', entity('new', { createTime: s.clock.now() }));
    expect(s.sampler.overview().find((r) => r.key === 'new')!.stale).toBe(false);
    s.clock.advance(staleAfterMs);
    expect(s.sampler.health()).toMatchObject({ ok: false, staleEntities: 1 });
    // Past as long unsampled: stale as any other.
    s.clock.advance(1);
    expect(s.sampler.health()).toMatchObject({ ok: false, staleEntities: 2 });

    // Sampled: neither is.
    for (const key of ['old', 'new']) {
      s.sizes.set(key, 500);
      s.offsets.set(key, 1000n);
    }
    await s.tick();
    expect(s.sampler.health()).toMatchObject({ ok: true, staleEntities: 0 });
  });

  it('keeps forecast_pool_dry while a pool too short for its requests refuses them, though nothing is taken', async () => {
    const s = setup();
    const keys = await fleet(s, 3, () => 200);
    // Refills stop; 74 ids stay, requests ask for 94: every take is refused and none is counted as taken.
    for (let t = 0; t < 70; t++) {
      s.sizes.set('e03', 74);
      if (t > 5) s.refused.set('e03', (s.refused.get('e03') ?? 0) + 1);
      keys.forEach((key) => key !== 'e03' && s.offsets.set(key, s.offsets.get(key)! + 200n));
      await s.tick();
    }
    expect(s.sampler.forecast('e03')!.takePerSecond).toBe(0);
    expect(s.sampler.overview().find((r) => r.key === 'e03')!.forecast.poolDrySeconds).toBe(0);
    expect(
      s.alarms
        .activeAlarms()
        .filter((a) => a.entityKey === 'e03')
        .map((a) => a.name)
        .sort(),
    ).toEqual(['forecast_pool_dry', 'pool_low']);
    // Refusals stop for a whole rate window (no requests): "never" again, and the condition clears.
    for (let t = 0; t < 61; t++) await s.tick();
    expect(s.sampler.overview().find((r) => r.key === 'e03')!.forecast.poolDrySeconds).toBeNull();
    expect(
      s.alarms
        .activeAlarms()
        .filter((a) => a.entityKey === 'e03')
        .map((a) => a.name),
    ).toEqual(['pool_low']);
  });

  it('raises pool_low and forecast_pool_dry for a draining entity whatever its position in the list', async () => {
    for (const position of [0, 6, 11]) {
      const s = setup();
      const keys = await fleet(s, 3, (i) => (i === 1 ? 3000 : 100));
      const dry = keys[position];
      // Refills of `dry` stop (its row locked): the pool drains at 40,000 ids/s.
      for (let t = 0; t < 12; t++) {
        const size = Math.max(0, 500_000 - (t + 1) * 40_000);
        s.sizes.set(dry, size);
        keys.forEach((key, i) => {
          if (key !== dry) s.offsets.set(key, s.offsets.get(key)! + BigInt(i === 1 ? 3000 : 100));
        });
        await s.tick();
      }
      const raised = s.sent.filter((p) => p.entityKey === dry).map((p) => p.alarm);
      expect(raised, `position ${position}`).toContain('pool_low');
      expect(raised, `position ${position}`).toContain('forecast_pool_dry');
      expect(s.sent.filter((p) => p.entityKey !== dry && p.entityKey !== undefined)).toEqual([]);
    }
  });
});
