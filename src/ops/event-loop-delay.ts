import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/**
 * How often the event-loop delay is sampled (ms). prom-client samples every
 * 10 ms: its timer was two thirds of an idle instance's wake-ups
 * (`bench/idle.bench.ts`). Ten samples a second still give each scrape's
 * window (15 s or more) a hundred or more readings.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

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
 * histogram sampling every {@link EVENT_LOOP_SAMPLE_MS}: each reading is the
 * delay beyond the sampling interval. Node's histogram records the time
 * between two firings of its timer, the interval included, so at 100 ms an
 * instance at rest would read 0.1 s where prom-client's 10 ms read 0.01 s;
 * here it reads ~0 either way. Call after `collectDefaultMetrics`.
 */
export function registerEventLoopDelay(registry: Registry): void {
  const histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS });
  histogram.enable();
  const gauges = new Map<Statistic, Gauge>();
  const beyond = (ns: number) => Math.max(0, ns / 1e9 - EVENT_LOOP_SAMPLE_MS / 1000);
  const read: Record<Statistic, () => number> = {
    min: () => beyond(histogram.min),
    max: () => beyond(histogram.max),
    mean: () => beyond(histogram.mean),
    stddev: () => histogram.stddev / 1e9,
    p50: () => beyond(histogram.percentile(50)),
    p90: () => beyond(histogram.percentile(90)),
    p99: () => beyond(histogram.percentile(99)),
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
