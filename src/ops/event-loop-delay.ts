import { type RecordableHistogram, createHistogram } from 'node:perf_hooks';
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
