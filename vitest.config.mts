import { defineConfig } from 'vitest/config';
import SlowestFirst from './test/support/sequencer.mts';

/**
 * Files that run three at a time (all four are quiet), once the side-by-side files are done
 * (docs/testing.md#how-the-suite-runs). Each bounds a recovery, a lease or a
 * timeout at a few times what it measures, as the files run alone do, but
 * mostly waits (a cut, a TTL, a statement timeout): measured alone, each kept
 * the machine's two cores 3–32 % busy on average, so two such neighbours
 * still leave it more than a core. None of them changes a shared server (each runs its own
 * Redis, or none) or counts what another file could add to a shared one.
 */
const QUIET = [
  'test/partition/partition.test.ts', // ids again within 3 s of the heal (0.1–1.4 s measured), seven scenarios at once; 22 % busy
  'test/integration/worker-lease.test.ts', // 3 s leases renewed every second; no Redis; 29 % busy (failed beside three files)
  'test/integration/postgres.test.ts', // statement timeouts bounded at + 5–8 s; its own server for kill -9 and SIGSTOP; 32 % busy
  'test/integration/registry-generation.test.ts', // its own Redis; GETs over 2 s idle, a retirement seen within a few 100 ms ticks (bound 3 s); 3 % busy
];

/**
 * Files that run alone, one after another, once the rest is done
 * (docs/testing.md#how-the-suite-runs). Each asserts what a busy neighbour
 * on this 2-core machine would move: a rate, a latency or a memory peak of
 * the process; a recovery or a visibility bounded at a few times what it
 * measures; a lease of 1–3 s kept across a stall; processes that must
 * overlap in time; a burst inside one second; or it changes a shared server
 * the others use; and it is busy, or its bound is tight, where the files
 * in QUIET are quiet. Every other file waits far more than it computes,
 * or bounds what it measures many times over, and runs beside two others.
 */
const ALONE = [
  'test/integration/fence.test.ts', // FUNCTION DELETE on the shared Redis; a 1 s refill lock renewed through a 4 s refill
  'test/integration/instances.test.ts', // an alarm seen elsewhere within 2 s, answers within 1.5 s, gone within TTL + 150 ms
  'test/integration/scale.test.ts', // 150 registrations a second, admin views within 2 s at 10,000 entities
  'test/integration/idempotency-bound.test.ts', // peak RSS, latency flat over 50,000 batches
  'test/integration/log-volume.test.ts', // log lines a second
  'test/integration/prometheus-live.test.ts', // no alert pending on a healthy instance: refills keep up with its load (CPU-starved beside three files, IdpoolPoolDryForecast went pending)
  'test/integration/auth-probing.test.ts', // 401s and queries a second, median latency while probed
  'test/integration/refill-lock.test.ts', // ids again within 2 s of a holder's kill (0.6–1.0 s measured)
  'test/integration/redis-restore.test.ts', // ids again within one refill interval of the first refusal
  'test/integration/coalesced-take.test.ts', // a burst inside one Redis second
  'test/integration/per-second-limit.test.ts', // per-second windows on the Redis clock
  'test/integration/snowflake-limits.test.ts', // ids a second
  'test/integration/snowflake-http.test.ts', // a restart inside a 2.5 s clock wait
  'test/integration/library.test.ts', // 4 processes that must overlap in time (a slow start staggers them), next() within 300 ms
  'test/integration/rolling-upgrade.test.ts', // no entity refused 3 s or longer (3 s TTLs)
];

/** What both projects share; not `extends: true`, which would run the global setup once per project too. */
const TIMEOUTS = { testTimeout: 120_000, hookTimeout: 120_000 };

export default defineConfig({
  test: {
    // Creates the idpool_test databases when missing, drops what the run created
    // (test/support/global-setup.ts): once, for both projects.
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default'],
    sequence: { sequencer: SlowestFirst },
    projects: [
      {
        // The unit tests, in the side-by-side part: no process, server or clock of their own to wait for, and no
        // module state one leaves for the next (each builds what it tests), so a worker keeps the modules it
        // loaded for its next file (isolate: false): alone, 74 files in 9 s and 16 s of CPU instead of 19 s and 35 s.
        test: {
          ...TIMEOUTS,
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          isolate: false,
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // Three files at once: four kept both cores 100 % busy (docs/testing.md), so a fourth
        // only adds contention; most of an integration file's time is waiting
        // (for a cut, a TTL, a refill, a process to start).
        // The matrix (test/integration/matrix-*.test.ts, one file per backend) belongs here: each file
        // is one shared instance and mostly waits for its doors' processes (the CLI, the Java, Python
        // and Go drivers, built once for the three files: test/matrix/drivers.ts); it bounds nothing
        // tighter than 5 s a cell, so the three run side by side.
        test: {
          ...TIMEOUTS,
          name: 'side-by-side',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', ...QUIET, ...ALONE],
          // Modules kept as the unit tests keep them: what a file tests runs in the processes it starts and stops,
          // and test/support keeps only caches (docs/testing.md#how-the-suite-runs: 24 s of imports, not most of 103 s).
          isolate: false,
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: { ...TIMEOUTS, name: 'quiet', include: QUIET, maxWorkers: 3, sequence: { groupOrder: 2 } },
      },
      {
        test: { ...TIMEOUTS, name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 3 } },
      },
    ],
  },
});
