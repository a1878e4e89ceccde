/**
 * Gapless series (issue 47): `POST /apps/:key/ids` of one gapless entity,
 * one number a take, each take with an Idempotency-Key of its own (as an
 * invoice service sends them), from 1 and 16 connections, on MariaDB and
 * PostgreSQL (each with a private Redis holding the high-water record) and
 * the embedded SQLite file (the high-water file). The figures are numbers/s
 * of the one entity, autocannon's p50 and p99 and the service's CPU per
 * number, the median of the rounds, and the machine's load average at the
 * end; the target (issue 47) is ≥ 1,000/s and p99 ≤ 20 ms on MariaDB with
 * 16. The takes that wait for an entity's transaction share the next one,
 * sent in one round trip where the instance knows the counter
 * (src/gapless/series.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { dropSchema, fmt, freshSchema, registerEntity, startRedis, startService } from './fixtures/deployment';
import { load } from './fixtures/load';

const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 5);
const POSTGRES = process.env.IDPOOL_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/idpool_test';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function freshPostgres(name: string): Promise<string> {
  const admin = new Client({ connectionString: POSTGRES });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
  const u = new URL(POSTGRES);
  u.pathname = `/${name}`;
  return u.toString();
}

interface Backend {
  name: string;
  env: () => Promise<{ env: Record<string, string>; done: () => Promise<void> }>;
}

/** A database at `url` with a private Redis beside it; `drop` removes the database after the run. */
async function withRedis(url: string, drop: () => Promise<unknown>) {
  const redis = await startRedis();
  return {
    env: { IDPOOL_DATABASE_URL: url, IDPOOL_REDIS_URL: redis.url },
    done: async () => {
      redis.proc.kill('SIGKILL');
      rmSync(redis.dir, { recursive: true, force: true });
      await drop();
    },
  };
}

const BACKENDS: Backend[] = [
  {
    name: 'MariaDB + Redis',
    env: async () => withRedis(await freshSchema('idpool_bench_gapless'), () => dropSchema('idpool_bench_gapless')),
  },
  {
    name: 'PostgreSQL + Redis',
    // A fresh database of the same name drops the run's.
    env: async () =>
      withRedis(await freshPostgres('idpool_bench_gapless'), () => freshPostgres('idpool_bench_gapless')),
  },
  {
    name: 'SQLite file (embedded)',
    async env() {
      const dir = mkdtempSync(join(tmpdir(), 'idpool-bench-gapless-'));
      return {
        env: { IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}` },
        done: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];

/**
 * `BENCH_COMPARE=/path/to/tree` (a checkout built with `npm run build`):
 * its service beside this tree's, on the same database, their rounds
 * alternated, so both meet the same load of this shared machine.
 */
const COMPARE = process.env.BENCH_COMPARE;

interface Figures {
  rates: number[];
  p99s: number[];
  p50s: number[];
  /** The service process's CPU (user + system) per number, ms: what the machine's load does not change much. */
  cpuPerNumber: number[];
}

/** User + system CPU seconds of a process (stat(5) fields 14 and 15, in 10 ms ticks). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [utime, stime] = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 13)
    .map(Number);
  return (utime + stime) / 100;
}

async function round(
  service: { base: string; pid: number },
  key: string,
  secret: string,
  connections: number,
  tag: string,
  into: Figures,
) {
  const base = service.base;
  const cpu = cpuSeconds(service.pid);
  const r = await load(`${base}/apps/${key}/ids`, {
    connections,
    seconds: SECONDS,
    token: secret,
    body: '{"count":1}',
    header: ['idempotency-key', `${tag}-[<id>]`],
  });
  if (r.non2xx) throw new Error(`${connections} connections: ${r.non2xx} answers not 2xx`);
  into.rates.push(r.rps);
  into.p99s.push(r.p99);
  into.p50s.push(r.p50);
  into.cpuPerNumber.push(((cpuSeconds(service.pid) - cpu) * 1000) / (r.rps * SECONDS));
}

function line(name: string, connections: number, f: Figures): string {
  return `${name.padEnd(24)} ${String(connections).padStart(2)} clients: ${fmt(median(f.rates)).padStart(6)} numbers/s, p50 ${median(f.p50s)} ms, p99 ${median(f.p99s)} ms, service CPU ${median(f.cpuPerNumber).toFixed(2)} ms/number (rounds: ${f.rates.map(fmt).join(', ')}; load ${loadavg()[0].toFixed(1)})`;
}

async function main(): Promise<void> {
  const only = process.env.BENCH_BACKEND;
  for (const backend of BACKENDS.filter((b) => !only || b.name.startsWith(only))) {
    const { env, done } = await backend.env();
    const services = [
      { name: backend.name, ...(await startService({ ...env, IDPOOL_REQUEST_LOG: 'off' }, { compiled: true })) },
    ];
    if (COMPARE)
      services.push({
        name: `${backend.name} (compared)`,
        ...(await startService({ ...env, IDPOOL_REQUEST_LOG: 'off' }, { root: COMPARE })),
      });
    try {
      for (const connections of [1, 16]) {
        const runs = await Promise.all(
          services.map(async (s, i) => {
            const key = `inv${connections}s${i}`;
            const secret = await registerEntity(Number(new URL(s.base).port), {
              key,
              format: 'INV{yyyy}{MM}{dd}-{seq:9}',
              gapless: true,
            });
            return { ...s, key, secret, figures: { rates: [], p99s: [], p50s: [], cpuPerNumber: [] } };
          }),
        );
        for (let r = 0; r < ROUNDS; r++)
          for (const run of runs)
            await round({ base: run.base, pid: run.proc.pid! }, run.key, run.secret, connections, `b${r}`, run.figures);
        for (const run of runs) console.log(line(run.name, connections, run.figures));
      }
    } finally {
      for (const { proc } of services) {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }
      await done();
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
