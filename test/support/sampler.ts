/** The ops sampler's timings and alarm thresholds the unit tests share: one sample a second, the shipped thresholds. */
export const SAMPLER_SETTINGS = {
  sampleMs: 1000,
  rateWindowMs: 60_000,
  periodRateWindowMs: 900_000,
  chartRateWindowMs: 5000,
  historyMs: 60_000,
  horizonSeconds: 30 * 86_400,
  poolDrySeconds: 10,
  poolLowPercent: 50,
  workerRangePercent: 90,
} as const;
