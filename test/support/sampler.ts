/** The ops sampler's timings and alarm thresholds the unit tests share: one sample a second, the shipped thresholds. */
export const SAMPLER_SETTINGS = {
  sampleMs: 1000,
  rateWindowMs: 60_000,
  periodRateWindowMs: 900_000,
  historyMs: 60_000,
  alertHorizonDays: 30,
  alertPoolDrySeconds: 10,
  alertPoolLowPercent: 50,
  alertWorkerRangePercent: 90,
} as const;
