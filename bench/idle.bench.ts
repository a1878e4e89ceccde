/**
 * What idle entities cost an instance (`npm run bench -- idle`): for each
 * count in BENCH_IDLE_ENTITIES (default 10,000 and 100,000), one compiled
 * service process (`npm run build` first) on a fresh MariaDB schema and a private redis-server, the
 * entities inserted in bulk and filled to their floor, then BENCH_IDLE_SECONDS
 * (default 30) of the idle service's CPU (/proc) and Redis commands per
 * second; then one entity takes an id every 50 ms and its sample age on
 * /metrics must stay near a second (busy entities are sampled every run).
 * Targets: <= 2 % of a core at 10,000, <= 5 % at 100,000.
 * A benchmark prints figures; it asserts nothing.
 */
import { readFileSync, rmSync } from 'node:fs';
import Redis from 'ioredis';
import {
  bulkInsert,
  dropSchema,
  fmt,
  freshSchema,
  registerEntity,
  startRedis,
  startService,
  waitPool,
} from './fixtures/deployment';
import { sleep } from '../test/support/wait';

const COUNTS = (process.env.BENCH_IDLE_ENTITIES || '10000,100000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_IDLE_SECONDS || 30);

/** CPU seconds a process has used (Linux /proc, user + system, 100 Hz ticks). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function commands(redis: Redis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))![1]);
}

async function measure(count: number): Promise<string> {
  const schemaName = `idpool_bench_idle_${process.pid}_${count}`;
  const url = await freshSchema(schemaName);
  const redisServer = await startRedis();
  const redis = new Redis(redisServer.url);
  // The compiled service, as `npm start` runs it: under tsx the same idle
  // service measured ~0.2 points more (its loader thread and helpers).
  const service = await startService(
    { IDPOOL_DATABASE_URL: url, IDPOOL_REDIS_URL: redisServer.url, IDPOOL_REQUEST_LOG: 'off' },
    { compiled: true },
  );
  try {
    const port = Number(new URL(service.base).port);
    const secret = await registerEntity(port, { key: 'hot', maxSizePerSecond: 0 });
    await waitPool(port, 'hot', 1000);
    const filled = performance.now();
    await bulkInsert(url, 0, count - 1);
    // Four keys per entity once its floor is pushed: ids, fence, epoch marker, pushed counter.
    while ((await redis.dbsize()) < count * 4) await sleep(500);
    const fillSeconds = (performance.now() - filled) / 1000;
    await sleep(5000); // the last refills settle

    // Idle: nothing but the instance's own loops.
    const cpu0 = cpuSeconds(service.proc.pid!);
    const cmd0 = await commands(redis);
    await sleep(SECONDS * 1000);
    const cpu = (cpuSeconds(service.proc.pid!) - cpu0) / SECONDS;
    const cmds = ((await commands(redis)) - cmd0) / SECONDS;

    // Then one entity busy: it must still be sampled every run.
    let stop = false;
    let takes = 0;
    const hot = (async () => {
      while (!stop) {
        const res = await fetch(`${service.base}/apps/hot/ids`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}` },
        });
        await res.arrayBuffer();
        if (res.status === 200) takes++;
        await sleep(50);
      }
    })();
    let hotAgeMax = 0;
    await sleep(2000);
    for (let i = 0; i < 5; i++) {
      const text = await fetch(`${service.base}/metrics`).then((r) => r.text());
      const age = Number(/idpool_ops_sample_age_seconds\{entity="hot"\} ([\d.e+-]+)/.exec(text)?.[1] ?? Number.NaN);
      if (!Number.isNaN(age)) hotAgeMax = Math.max(hotAgeMax, age);
      await sleep(2000);
    }
    stop = true;
    await hot;
    return `${fmt(count).padStart(7)} entities (filled in ${fillSeconds.toFixed(0)} s): idle, service CPU ${(cpu * 100).toFixed(2)} % of a core and ${fmt(cmds)} Redis commands/s over ${SECONDS} s; then one busy entity (${takes} takes in 12 s): its sample age at most ${hotAgeMax.toFixed(1)} s over 5 scrapes`;
  } finally {
    service.proc.kill('SIGTERM');
    await new Promise((r) => service.proc.once('exit', r));
    redis.disconnect();
    redisServer.proc.kill('SIGKILL');
    rmSync(redisServer.dir, { recursive: true, force: true });
    await dropSchema(schemaName);
  }
}

async function main() {
  const lines: string[] = [];
  for (const count of COUNTS) {
    const line = await measure(count);
    process.stdout.write(`${line}\n`);
    lines.push(line);
  }
  process.stdout.write(
    `\nidle cost, node ${process.version}, ${new Date().toISOString()} (targets: <= 2 % at 10,000, <= 5 % at 100,000):\n${lines.map((l) => `  ${l}`).join('\n')}\n`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
