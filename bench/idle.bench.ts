/**
 * What idle entities cost an instance (`npm run bench -- idle`): for each
 * count in BENCH_IDLE_ENTITIES (default 10,000 and 100,000), one compiled
 * service process (`npm run build` first) on a fresh MariaDB schema and a private redis-server, the
 * entities inserted in bulk and filled to their floor, then BENCH_IDLE_SECONDS
 * (default 30) of the idle service's CPU (/proc) and Redis commands per
 * second, twice: just after the fill, and at rest, once the fill's
 * reservations have left the forecasts' rate window (a minute); then one entity takes an id every 50 ms and its sample age on
 * /metrics must stay near a second (busy entities are sampled every run).
 * Targets: <= 1 % of a core at 10,000, <= 3 % at 100,000.
 *
 * BENCH_IDLE_BASELINE=<git ref> measures that commit's compiled service too,
 * alternating with this tree's BENCH_IDLE_ROUNDS times (default 3) per count,
 * and prints the medians and their ratio: on a loaded machine only runs
 * side by side compare. BENCH_IDLE_NODE_OPTIONS is handed to the service
 * processes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 * A benchmark prints figures; it asserts nothing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import {
  buildOnce,
  bulkInsert,
  dropSchema,
  fmt,
  freshSchema,
  registerEntity,
  startRedis,
  startService,
  waitPool,
} from './fixtures/deployment';
import { DEFAULT_OPS } from '../src/ops/settings';
import { sleep } from '../test/support/wait';

const COUNTS = (process.env.BENCH_IDLE_ENTITIES || '10000,100000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_IDLE_SECONDS || 30);
const BASELINE = process.env.BENCH_IDLE_BASELINE;
const ROUNDS = Number(process.env.BENCH_IDLE_ROUNDS || 3);
const ROOT = join(__dirname, '..');
/** The ops sampler's rate window: a fill's reservations count in the forecasts that long. */
const RATE_WINDOW_MS = DEFAULT_OPS.rateWindowMs;

/** `ref`'s tree, compiled, in a directory of its own (this tree's node_modules). */
function baselineTree(ref: string): string {
  const commit = execFileSync('git', ['rev-parse', '--short', ref], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `idpool-idle-baseline-${commit}`);
  if (!existsSync(join(dir, 'dist', 'src', 'main.js'))) {
    rmSync(dir, { recursive: true, force: true });
    execFileSync('sh', ['-c', `mkdir -p ${dir} && git archive ${commit} | tar -x -C ${dir}`], { cwd: ROOT });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return dir;
}

/** CPU seconds a process has used (Linux /proc, user + system, 100 Hz ticks). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Times the process's main thread has gone to sleep waiting (Linux /proc): its wake-ups. */
function wakeups(pid: number): number {
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

async function commands(redis: Redis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))![1]);
}

interface Figures {
  line: string;
  /** Share of a core, idle. */
  cpu: number;
  /** Redis commands a second, idle. */
  cmds: number;
}

async function measure(count: number, root?: string): Promise<Figures> {
  const schemaName = `idpool_bench_idle_${process.pid}_${count}`;
  const url = await freshSchema(schemaName);
  const redisServer = await startRedis();
  const redis = new Redis(redisServer.url);
  // The compiled service, as `npm start` runs it: under tsx the same idle
  // service measured ~0.2 points more (its loader thread and helpers).
  const service = await startService(
    {
      IDPOOL_DATABASE_URL: url,
      IDPOOL_REDIS_URL: redisServer.url,
      IDPOOL_REQUEST_LOG: 'off',
      NODE_OPTIONS: process.env.BENCH_IDLE_NODE_OPTIONS ?? '',
    },
    { compiled: true, root },
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

    // Idle: nothing but the instance's own loops. First just after the fill,
    // while every forecast's reserve rate still holds the fill's
    // reservations (IDPOOL_OPS_RATE_WINDOW_MS, a minute) and each sample is
    // recorded; then at rest, once the fill has left that window.
    const window = async () => {
      const cpu0 = cpuSeconds(service.proc.pid!);
      const wake0 = wakeups(service.proc.pid!);
      const cmd0 = await commands(redis);
      await sleep(SECONDS * 1000);
      return {
        cpu: (cpuSeconds(service.proc.pid!) - cpu0) / SECONDS,
        wakes: (wakeups(service.proc.pid!) - wake0) / SECONDS,
        cmds: ((await commands(redis)) - cmd0) / SECONDS,
      };
    };
    const afterFill = await window();
    const restAt = filled + fillSeconds * 1000 + RATE_WINDOW_MS + 5000;
    await sleep(Math.max(0, restAt - performance.now()));
    const { cpu, cmds, wakes } = await window();

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
    const line = `${fmt(count).padStart(7)} entities (filled in ${fillSeconds.toFixed(0)} s): idle at rest, service CPU ${(cpu * 100).toFixed(2)} % of a core, ${wakes.toFixed(0)} main-thread wake-ups/s and ${fmt(cmds)} Redis commands/s over ${SECONDS} s (just after the fill ${(afterFill.cpu * 100).toFixed(2)} %, ${fmt(afterFill.cmds)}/s); then one busy entity (${takes} takes in 12 s): its sample age at most ${hotAgeMax.toFixed(1)} s over 5 scrapes`;
    return { line, cpu, cmds };
  } finally {
    service.proc.kill('SIGTERM');
    await new Promise((r) => service.proc.once('exit', r));
    redis.disconnect();
    redisServer.proc.kill('SIGKILL');
    rmSync(redisServer.dir, { recursive: true, force: true });
    await dropSchema(schemaName);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (x: number) => `${(x * 100).toFixed(2)} %`;

/** This tree and the baseline, alternating: the medians of each and their ratio. */
async function compare(count: number, baseline: string): Promise<string> {
  const runs: { base: Figures[]; tree: Figures[] } = { base: [], tree: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, root] of [
      ['base', baseline],
      ['tree', undefined],
    ] as const) {
      const figures = await measure(count, root);
      process.stdout.write(`  ${name} ${figures.line}\n`);
      runs[name].push(figures);
    }
  }
  const [base, tree] = [runs.base, runs.tree].map((r) => ({
    cpu: median(r.map((f) => f.cpu)),
    cmds: median(r.map((f) => f.cmds)),
    all: r.map((f) => pct(f.cpu)).join(', '),
  }));
  return (
    `${fmt(count).padStart(7)} entities, medians of ${ROUNDS} alternating runs: ` +
    `${BASELINE} ${pct(base.cpu)} (${base.all}), ${fmt(base.cmds)} Redis commands/s; ` +
    `this tree ${pct(tree.cpu)} (${tree.all}), ${fmt(tree.cmds)} Redis commands/s; ` +
    `CPU ratio ${(tree.cpu / base.cpu).toFixed(2)}`
  );
}

async function main() {
  // This tree first: what a run measures is the code as it was when the run started.
  buildOnce();
  const baseline = BASELINE ? baselineTree(BASELINE) : undefined;
  const lines: string[] = [];
  for (const count of COUNTS) {
    const line = baseline ? await compare(count, baseline) : (await measure(count)).line;
    process.stdout.write(`${line}\n`);
    lines.push(line);
  }
  process.stdout.write(
    `\nidle cost, node ${process.version}, ${new Date().toISOString()} (targets: <= 1 % at 10,000, <= 3 % at 100,000):\n${lines.map((l) => `  ${l}`).join('\n')}\n`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
