import { type RecordableHistogram, createHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';
import { onAligned } from '../schedule';

/**
 * prom-client's 10 ms timer was two thirds of an idle instance's wake-ups (`bench/idle.bench.ts`), a third at
 * 100 ms (1.6 ms of CPU a second against 0.2 without it). A second gives a 15 s scrape window fifteen readings,
 * and a recurring stall of a few hundred ms shows within a few scrapes.
 */
const EVENT_LOOP_SAMPLE_MS = 1000;

/** prom-client's event-loop delay gauges, which {@link registerEventLoopDelay} replaces, and what each reads (ns). */
const GAUGES: readonly [string, string, (h: RecordableHistogram) => number][] = [
  ['min', 'The minimum recorded event loop delay.', (h) => h.min],
  ['max', 'The maximum recorded event loop delay.', (h) => h.max],
  ['mean', 'The mean of the recorded event loop delays.', (h) => h.mean],
  ['stddev', 'The standard deviation of the recorded event loop delays.', (h) => h.stddev],
  ['p50', 'The 50th percentile of the recorded event loop delays.', (h) => h.percentile(50)],
  ['p90', 'The 90th percentile of the recorded event loop delays.', (h) => h.percentile(90)],
  ['p99', 'The 99th percentile of the recorded event loop delays.', (h) => h.percentile(99)],
];

/**
 * Replaces prom-client's `nodejs_eventloop_lag_*_seconds` (same names and help) on `registry`, after
 * `collectDefaultMetrics`, from how late a timer firing every {@link EVENT_LOOP_SAMPLE_MS} comes. Not
 * `monitorEventLoopDelay`: its reset at each scrape drops the next reading, a whole second here.
 */
export function registerEventLoopDelay(registry: Registry): void {
  const histogram = createHistogram();
  // On the whole seconds the service's loops wake on (schedule.ts): no wake-up of its own.
  onAligned(
    EVENT_LOOP_SAMPLE_MS,
    (dueAt) => histogram.record(Math.max(1, Math.round((performance.now() - dueAt) * 1e6))),
    () => performance.now(),
  );
  const gauges = new Map<Gauge, (h: RecordableHistogram) => number>();
  // One collect sets all seven and starts the next scrape's window, as prom-client's does.
  const collect = () => {
    if (histogram.count > 0) for (const [gauge, read] of gauges) gauge.set(read(histogram) / 1e9);
    histogram.reset();
  };
  for (const [statistic, help, read] of GAUGES) {
    const name = `nodejs_eventloop_lag_${statistic}_seconds`;
    registry.removeSingleMetric(name);
    gauges.set(new Gauge({ name, help, registers: [registry], ...(statistic === 'min' ? { collect } : {}) }), read);
  }
}
