/**
 * `npm run bench`: runs every `bench/*.bench.ts` in its own process, one
 * after another (this machine has 2 cores; benchmarks must not overlap).
 * `npm run bench -- segment` runs only files whose name contains "segment".
 * Benchmarks are not tests: they print figures and ratios, they assert nothing.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const filter = process.argv[2];
const files = readdirSync(__dirname)
  .filter((f) => f.endsWith('.bench.ts') && (!filter || f.includes(filter)))
  .sort();
let failed = 0;
for (const file of files) {
  process.stdout.write(`\n=== ${file}\n`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', join(__dirname, file)], {
    stdio: 'inherit',
  });
  if (result.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
