/**
 * Leased segments: what one process hands out from them, and what the
 * service leases.
 *
 *   npx tsx bench/lease.bench.ts        (or `npm run bench -- lease`)
 *
 * Starts a real service (MariaDB at IDPOOL_TEST_MYSQL_URL, default
 * mysql://root@127.0.0.1:3306/idpool_test, a schema of its own; Redis at
 * IDPOOL_TEST_REDIS_URL) with a `trend` entity, then:
 *
 * 1. In-process ids: `IdpoolClient.leased(key).next()` (number ids), 1M
 *    synchronous calls per event-loop turn (where leases land), 50M per
 *    run, 5 runs, median quoted, with the leases it took; beside a bare
 *    field-increment loop measured the same way, as the ceiling here. And
 *    the same through `createIdGenerator({ service })`.
 * 2. Leases per second the service grants: C concurrent clients each
 *    calling `POST /apps/:key/segments` in a loop for 5 s.
 *
 * Figures only; a benchmark asserts nothing.
 */
import { IdpoolClient, IdpoolLeaseNotReadyError, type LeasedIds } from '../src/client';
import { type IdGenerator, SegmentsNotReadyError, createIdGenerator } from '../src/library';
import { register } from '../test/support/http';
import { startInstance } from '../test/support/processes';
import { createTestSchema, sharedRedisEnv } from '../test/support/services';

const CHUNK = 1_000_000;
const RUNS = 5;
const IDS_PER_RUN = 50_000_000;
const LEASE_SECONDS = 5;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (perSecond: number) => `${(perSecond / 1e6).toFixed(1)}M/s`;
const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
};

interface Run {
  perSecond: number;
  perCpuSecond: number;
  notReady: number;
}

// One loop per receiver type, so each call site stays monomorphic.
async function drawLeased(ids: LeasedIds<number>): Promise<Run> {
  let sink = 0;
  let drawn = 0;
  let notReady = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  while (drawn < IDS_PER_RUN) {
    try {
      for (let i = 0; i < CHUNK; i++) sink += ids.next();
      drawn += CHUNK;
    } catch (err) {
      if (!(err instanceof IdpoolLeaseNotReadyError)) throw err;
      notReady++;
    }
    await turn();
  }
  if (sink === -1) console.log(sink);
  return { perSecond: drawn / ((performance.now() - t0) / 1000), perCpuSecond: drawn / cpuSeconds(cpu0), notReady };
}

async function drawGenerator(gen: IdGenerator<number>, key: string): Promise<Run> {
  let sink = 0;
  let drawn = 0;
  let notReady = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  while (drawn < IDS_PER_RUN) {
    try {
      for (let i = 0; i < CHUNK; i++) sink += gen.next(key);
      drawn += CHUNK;
    } catch (err) {
      if (!(err instanceof SegmentsNotReadyError)) throw err;
      notReady++;
    }
    await turn();
  }
  if (sink === -1) console.log(sink);
  return { perSecond: drawn / ((performance.now() - t0) / 1000), perCpuSecond: drawn / cpuSeconds(cpu0), notReady };
}

async function drawBare(): Promise<Run> {
  const holder = { value: 0 };
  let sink = 0;
  let drawn = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  while (drawn < IDS_PER_RUN) {
    for (let i = 0; i < CHUNK; i++) sink += holder.value++;
    drawn += CHUNK;
    await turn();
  }
  if (sink === -1) console.log(sink);
  return { perSecond: drawn / ((performance.now() - t0) / 1000), perCpuSecond: drawn / cpuSeconds(cpu0), notReady: 0 };
}

function report(name: string, runs: Run[], extra = ''): void {
  console.log(
    `${name.padEnd(44)} ${fmt(median(runs.map((r) => r.perSecond)))} wall, ${fmt(median(runs.map((r) => r.perCpuSecond)))} per CPU-second${extra}`,
  );
}

async function main(): Promise<void> {
  const schema = await createTestSchema();
  const service = await startInstance({ IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv() });
  try {
    const key = 'bench_lease';
    const secret = await register(service.url, { key, mode: 'trend', step: 100_000, maxSizePerSecond: 0 });
    console.log(`node ${process.version}, service ${service.url}, entity ${key} (trend, step 100,000)`);

    const bare: Run[] = [];
    for (let r = 0; r < RUNS; r++) bare.push(await drawBare());
    report('bare field increment (ceiling)', bare);

    const client = new IdpoolClient({
      endpoints: service.url,
      entities: { [key]: { secret, mode: 'trend', lease: { ids: 'number' } } },
    });
    const leased = client.leased(key) as LeasedIds<number>;
    await leased.open();
    const runs: Run[] = [];
    for (let r = 0; r < RUNS; r++) runs.push(await drawLeased(leased));
    report(
      'IdpoolClient leased(key).next(), number ids',
      runs,
      `; ${leased.leases} leases for ${(RUNS * IDS_PER_RUN) / 1e6}M ids, ${runs.reduce((n, r) => n + r.notReady, 0)} chunks cut short by not-ready`,
    );
    client.close();

    const gen = await createIdGenerator({ service: { url: service.url, secrets: { [key]: secret } }, ids: 'number' });
    await gen.open(key);
    const genRuns: Run[] = [];
    for (let r = 0; r < RUNS; r++) genRuns.push(await drawGenerator(gen, key));
    report(
      'createIdGenerator({ service }).next(key)',
      genRuns,
      `; ${genRuns.reduce((n, r) => n + r.notReady, 0)} chunks cut short by not-ready`,
    );
    await gen.close();

    for (const concurrency of [1, 8, 32]) {
      let leases = 0;
      const end = performance.now() + LEASE_SECONDS * 1000;
      const url = `${service.url}/apps/${key}/segments`;
      const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < end) {
            const res = await fetch(url, { method: 'POST', headers, body: '{"size":1000}' });
            if (res.status !== 200) throw new Error(`lease answered ${res.status}: ${await res.text()}`);
            await res.arrayBuffer();
            leases++;
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      console.log(
        `POST /apps/:key/segments, ${String(concurrency).padStart(2)} concurrent clients   ${Math.round(leases / seconds)} leases/s (${leases} in ${seconds.toFixed(1)} s)`,
      );
    }
  } finally {
    await service.stop();
    await schema.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
