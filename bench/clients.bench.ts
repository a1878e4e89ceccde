/**
 * Leased ids per second in the Java, Python and Go clients (clients/), each
 * in its own process, from segments a real service leases.
 *
 *   npx tsx bench/clients.bench.ts        (or `npm run bench -- clients`)
 *
 * Starts a real service (MariaDB at IDPOOL_TEST_MYSQL_URL, a schema of its
 * own; Redis at IDPOOL_TEST_REDIS_URL) with a `trend` entity (step 10,000,
 * no per-second limit), builds the Java and Go check programs, and runs each
 * one's `bench` mode: `LeasedIds.next()` in a loop on 1 and then 2 threads
 * (this machine has 2 cores), summing the ids so no call is optimised away.
 * Java and Go draw 200M ids per run (Java runs each twice, the first to warm
 * the JIT up), Python 5M. Leases adapt from the step up to 10M per segment.
 *
 * Figures only; a benchmark asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildClientLanguages, runClient } from '../test/support/clients';
import { register } from '../test/support/http';
import { startInstance } from '../test/support/processes';
import { createTestSchema, sharedRedisEnv } from '../test/support/services';

const IDS = { java: 200_000_000, go: 200_000_000, python: 5_000_000 };

interface Figure {
  lang: string;
  threads: number;
  ids: number;
  seconds: number;
  perSecond: number;
  leases: number;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-clients-bench-'));
  const schema = await createTestSchema();
  const instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv() });
  try {
    const langs = await buildClientLanguages(dir);
    const key = `bench-clients-${process.pid}`;
    const secret = await register(instance.url, { key, mode: 'trend', step: 10_000, maxSizePerSecond: 0 });
    const figures: Figure[] = [];
    for (const lang of langs) {
      const run = runClient(lang, 'bench', {
        IDPOOL_ENDPOINTS: instance.url,
        LEASE_KEY: key,
        LEASE_SECRET: secret,
        BENCH_IDS: String(IDS[lang.name]),
        BENCH_THREADS: '1,2',
      });
      const code = await run.exited;
      if (code !== 0) throw new Error(`${lang.name} bench exited with ${code}:\n${run.output()}`);
      for (const line of run.output().split('\n')) if (line.startsWith('{')) figures.push(JSON.parse(line) as Figure);
    }
    console.log('language  threads        ids   seconds      ids/s  leases (cumulative)');
    for (const f of figures) {
      console.log(
        `${f.lang.padEnd(8)}  ${String(f.threads).padStart(7)}  ${f.ids.toLocaleString('en-US').padStart(11)}  ${f.seconds
          .toFixed(2)
          .padStart(7)}  ${`${(f.perSecond / 1e6).toFixed(1)}M`.padStart(9)}  ${String(f.leases).padStart(6)}`,
      );
    }
  } finally {
    await instance.stop();
    await schema.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
