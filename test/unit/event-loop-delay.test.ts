import { describe, expect, it } from 'vitest';
import { OpsMetrics } from '../../src/ops/metrics';
import { parseMetrics } from '../support/http';

const LAG = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'].map((s) => `nodejs_eventloop_lag_${s}_seconds`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the event-loop delay gauges (sampled every 100 ms)', () => {
  it("read the delay beyond the sampling interval, about 0 at rest (Node's histogram reads the interval itself, 0.1 s); each name once, beside prom-client's own lag gauge", async () => {
    const metrics = new OpsMetrics();
    const scrape = async () => parseMetrics((await metrics.render()).body);
    await sleep(450);
    const rest = await scrape();
    for (const name of LAG) expect(rest.has(name), name).toBe(true);
    expect(rest.get('nodejs_eventloop_lag_p50_seconds')).toBeLessThan(0.02);
    expect(rest.get('nodejs_eventloop_lag_max_seconds')).toBeLessThan(0.05);
    expect(rest.has('nodejs_eventloop_lag_seconds')).toBe(true);
    const body = (await metrics.render()).body;
    for (const name of LAG) expect(body.split('\n').filter((l) => l.startsWith(`# TYPE ${name} `))).toHaveLength(1);
  });
});
