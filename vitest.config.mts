import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Creates the idpool_test databases when missing, drops what the run created (test/support/global-setup.ts).
    globalSetup: ['test/support/global-setup.ts'],
    // Integration tests spawn service processes and redis-servers on a
    // 2-core machine: one file at a time keeps their timings honest.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
