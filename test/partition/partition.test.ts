/**
 * The partition suite (scenarios.ts says what each scenario does). The
 * scenarios share nothing (each has its own namespaces, addresses, Redis,
 * schema or mariadbd, and instances), so they run side by side inside this
 * file (`it.concurrent`; vitest runs the file itself alone, vitest.config.mts):
 * the suite takes about as long as its longest cut, not the sum.
 */
import { afterAll, beforeAll, it } from 'vitest';
import { describeWithServices } from '../support/describe-with-services';
import { Lab, removeLeftoverLabs } from '../support/netns';
import {
  type Cleanups,
  RECOVERY_TARGET_MS,
  REQUEST_BOUND_MS,
  SCENARIOS,
  describeResult,
  runScenario,
} from './scenarios';

async function tearDown(cleanups: Cleanups, lab: Lab): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  await lab.destroy();
}

describeWithServices(
  'network partitions: recovery within seconds of the heal, whatever the cut',
  { mysql: true, netns: true, privateMariadb: true },
  () => {
    const leftovers: { cleanups: Cleanups; lab: Lab }[] = [];

    // Namespaces of runs that died before their own afterAll.
    beforeAll(() => removeLeftoverLabs());

    // A scenario tears itself down; this catches one cut short by its timeout.
    afterAll(async () => {
      for (const { cleanups, lab } of leftovers) await tearDown(cleanups, lab);
    });

    it.concurrent.for(SCENARIOS)(
      '$name: no id twice, no 500, every request within its bound, ids again within 3 s of the heal',
      { timeout: 300_000 },
      async (scenario, ctx) => {
        const lab = new Lab();
        const cleanups: Cleanups = [];
        leftovers.push({ cleanups, lab });
        try {
          const result = await runScenario(scenario, lab, cleanups);
          process.stdout.write(`${describeResult(result)}\n`);
          void ctx.annotate?.(describeResult(result));
          // Concurrent tests assert through their own context's expect.
          ctx.expect(result.problems).toEqual([]);
          ctx.expect(result.idsRepeated).toBe(0);
          ctx.expect(result.slowestRequestMs).toBeLessThanOrEqual(REQUEST_BOUND_MS);
          ctx.expect(result.recoverySeconds * 1000).toBeLessThanOrEqual(RECOVERY_TARGET_MS);
        } finally {
          await tearDown(cleanups, lab);
        }
      },
    );
  },
);
