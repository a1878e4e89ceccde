import { createHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';
import { onAligned } from '../schedule';

/**
 * How often the event-loop delay is sampled (ms). prom-client samples every
 * 10 ms: its timer was two thirds of an idle instance's wake-ups
 * (`bench/idle.bench.ts`), and at 100 ms it still was a third of them: a
 * wake-up costs 0.1–0.2 ms of CPU on a small virtual machine, and an idle
 * Node process sampling every 100 ms spends 1.6 ms a second doing only that
 * (0.2 ms without it, measured). One sample a second gives each scrape's
 * window (15 s or more) fifteen readings or more; a stall of a few hundred
 * ms is caught when it overlaps a sample, so a recurring one shows within a
 * few scrapes.
 */
const EVENT_LOOP_SAMPLE_MS = 1000;

/** prom-client's event-loop delay gauges, which {@link registerEventLoopDelay} replaces. */
const GAUGES = [
  ['min', 'The minimum recorded event loop delay.'],
  ['max', 'The maximum recorded event loop delay.'],
  ['mean', 'The mean of the recorded event loop delays.'],
  ['stddev', 'The standard deviation of the recorded event loop delays.'],
  ['p50', 'The 50th percentile of the recorded event loop delays.'],
  ['p90', 'The 90th percentile of the recorded event loop delays.'],
  ['p99', 'The 99th percentile of the recorded event loop delays.'],
] as const;

type Statistic = (typeof GAUGES)[number][0];

/**
 * Puts `nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds` on
 * `registry` in place of prom-client's (same names and help), from one
 * histogram of how late a timer firing every {@link EVENT_LOOP_SAMPLE_MS}
 * comes: about 0 at rest (prom-client's read 0.01 s, its interval). Not
 * Node's `monitorEventLoopDelay`: its reset (each scrape starts a window)
 * drops the next reading, a whole second of stalls here. Call after
 * `collectDefaultMetrics`.
 */
export function registerEventLoopDelay(registry: Registry): void {
  const histogram = createHistogram();
  // On the whole seconds the service's loops wake on (schedule.ts): no wake-up of its own.
  onAligned(
    EVENT_LOOP_SAMPLE_MS,
    (dueAt) => histogram.record(Math.max(1, Math.round((performance.now() - dueAt) * 1e6))),
    () => performance.now(),
  );
  const gauges = new Map<Statistic, Gauge>();
  const seconds = (ns: number) => ns / 1e9;
  const read: Record<Statistic, () => number> = {
    min: () => seconds(histogram.min),
    max: () => seconds(histogram.max),
    mean: () => seconds(histogram.mean),
    stddev: () => seconds(histogram.stddev),
    p50: () => seconds(histogram.percentile(50)),
    p90: () => seconds(histogram.percentile(90)),
    p99: () => seconds(histogram.percentile(99)),
  };
  // One collect sets all seven and starts the next scrape's window, as prom-client's does.
  const collect = () => {
    if (histogram.count > 0) for (const [statistic, gauge] of gauges) gauge.set(read[statistic]());
    histogram.reset();
  };
  for (const [statistic, help] of GAUGES) {
    const name = `nodejs_eventloop_lag_${statistic}_seconds`;
    registry.removeSingleMetric(name);
    gauges.set(
      statistic,
      new Gauge({ name, help, registers: [registry], ...(statistic === 'min' ? { collect } : {}) }),
    );
  }
}
