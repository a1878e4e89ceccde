import { describe, expect, it } from 'vitest';
import { OpsMetrics } from '../../src/ops/metrics';
import { parseMetrics } from '../support/http';

const LAG = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'].map((s) => `nodejs_eventloop_lag_${s}_seconds`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the event-loop delay gauges (sampled every second)', () => {
  it("read how late a timer firing once a second comes: about 0 at rest (prom-client's read its 10 ms interval), a stall when one comes; each name once, beside prom-client's own lag gauge", async () => {
    const metrics = new OpsMetrics();
    const scrape = async () => parseMetrics((await metrics.render()).body);
    await sleep(2_200);
    const rest = await scrape();
    for (const name of LAG) expect(rest.has(name), name).toBe(true);
    expect(rest.get('nodejs_eventloop_lag_p50_seconds')).toBeLessThan(0.02);
    // At rest a timer is late by what the machine's other work costs it (126 ms seen beside a test suite).
    expect(rest.get('nodejs_eventloop_lag_max_seconds')).toBeLessThan(0.5);
    expect(rest.has('nodejs_eventloop_lag_seconds')).toBe(true);
    const body = (await metrics.render()).body;
    for (const name of LAG) expect(body.split('\n').filter((l) => l.startsWith(`# TYPE ${name} `))).toHaveLength(1);
    // A loop blocked 2.5 s delays a sample due in its first 1.5 s by at least 1 s: the next scrape shows it.
    const until = Date.now() + 2_500;
    while (Date.now() < until);
    await sleep(1_100);
    expect((await scrape()).get('nodejs_eventloop_lag_max_seconds')).toBeGreaterThan(1);
  });
});
