/**
 * The partition suite (scenarios.ts says what each scenario does). The
 * scenarios share nothing (each has its own namespaces, addresses, Redis,
 * schema or mariadbd, and instances), so they run side by side inside this
 * file (`describe.concurrent`; vitest still runs files one at a time):
 * the suite takes about as long as its longest cut, not the sum.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { privateMariadbPossible } from '../support/mariadb';
import { Lab, netnsUnavailable, removeLeftoverLabs } from '../support/netns';
import { servicesAvailable } from '../support/services';
import {
  type Cleanups,
  RECOVERY_TARGET_MS,
  REQUEST_BOUND_MS,
  SCENARIOS,
  describeResult,
  runScenario,
} from './scenarios';

const REQUIRED = process.env.IDPOOL_REQUIRE_SERVICES === '1';

async function tearDown(cleanups: Cleanups, lab: Lab): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  await lab.destroy();
}

describe.concurrent('network partitions: recovery within seconds of the heal, whatever the cut', () => {
  let available = false;
  const leftovers: { cleanups: Cleanups; lab: Lab }[] = [];

  beforeAll(async () => {
    const missing = netnsUnavailable() ?? (privateMariadbPossible() ? undefined : 'mariadbd cannot run here');
    if (missing) {
      const line = `!!! network namespaces unavailable (${missing})`;
      if (REQUIRED) throw new Error(`${line} and IDPOOL_REQUIRE_SERVICES=1`);
      process.stderr.write(`\n${line}: SKIPPING the partition suite\n\n`);
      return;
    }
    // Namespaces of runs that died before their own afterAll.
    removeLeftoverLabs();
    available = await servicesAvailable({ mysql: true });
  });

  // A scenario tears itself down; this catches one cut short by its timeout.
  afterAll(async () => {
    for (const { cleanups, lab } of leftovers) await tearDown(cleanups, lab);
  });

  it.for(SCENARIOS)(
    '$name: no id twice, no 500, every request within its bound, ids again within 3 s of the heal',
    { timeout: 300_000 },
    async (scenario, ctx) => {
      if (!available) return ctx.skip();
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
});
