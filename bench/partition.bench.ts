/**
 * `npm run bench -- partition`: what a network fault costs, on the partition
 * suite's scenarios (test/partition/scenarios.ts: Redis and a private
 * mariadbd in network namespaces behind veth pairs, links cut with a drop
 * filter, latency through a relay; needs root and `ip netns`). The
 * scenarios run one after another here, so each is measured alone.
 *
 * For each fault: the longest time no client got an id (the 503s a caller
 * saw), the seconds from the heal to ids again from every instance, the ids
 * wasted (reserved in the database, never handed out, not in a pool) and
 * the ids handed out twice. Figures, not assertions.
 */
import { Lab, netnsUnavailable, removeLeftoverLabs } from '../test/support/netns';
import {
  type Cleanups,
  SCENARIOS,
  type ScenarioResult,
  describeResult,
  runScenario,
} from '../test/partition/scenarios';

async function main(): Promise<void> {
  const missing = netnsUnavailable();
  if (missing) {
    process.stdout.write(`partition benchmark needs network namespaces: ${missing}\n`);
    process.exit(1);
  }
  removeLeftoverLabs();
  const results: ScenarioResult[] = [];
  for (const scenario of SCENARIOS) {
    const lab = new Lab();
    const cleanups: Cleanups = [];
    try {
      const result = await runScenario(scenario, lab, cleanups);
      process.stdout.write(`${describeResult(result)}\n`);
      for (const p of result.problems) process.stdout.write(`  problem: ${p.split('\n')[0]}\n`);
      results.push(result);
    } catch (err) {
      process.stdout.write(`${scenario.name}: failed: ${(err as Error).message}\n`);
    } finally {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
      await lab.destroy();
    }
  }
  const header = ['fault', 'cut (s)', 'no id (s)', 'heal → ids (s)', 'ids handed out', 'ids wasted', 'ids repeated'];
  process.stdout.write(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n`);
  for (const r of results) {
    const row = [
      r.name,
      r.faultSeconds.toFixed(0),
      r.outageSeconds.toFixed(1),
      r.recoverySeconds.toFixed(2),
      r.idsHandedOut,
      r.idsWasted,
      r.idsRepeated,
    ];
    process.stdout.write(`| ${row.join(' | ')} |\n`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  },
);
