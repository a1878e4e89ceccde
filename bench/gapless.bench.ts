/**
 * Gapless series (issue 47): `POST /apps/:key/ids` of one gapless entity,
 * one number a take, each take with an Idempotency-Key of its own (as an
 * invoice service sends them), from 1 and 16 connections, on MariaDB and
 * PostgreSQL (each with a private Redis holding the high-water record) and
 * the embedded SQLite file (the high-water file). The figure is numbers/s
 * of the one entity and autocannon's p99, the median of the rounds; the
 * target (issue 47) is ≥ 1,000/s and p99 ≤ 20 ms on MariaDB with 16.
 * Every take is one transaction on the period's counter row, or one for
 * the takes that waited for it (src/gapless/series.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

async function main(): Promise<void> {
  const only = process.env.BENCH_BACKEND;
  for (const backend of BACKENDS.filter((b) => !only || b.name.startsWith(only))) {
    const { env, done } = await backend.env();
    const { base, proc } = await startService({ ...env, IDPOOL_REQUEST_LOG: 'off' }, { compiled: true });
    try {
      const port = Number(new URL(base).port);
      for (const connections of [1, 16]) {
        const key = `inv${connections}`;
        const secret = await registerEntity(port, { key, format: 'INV{yyyy}{MM}{dd}-{seq:9}', gapless: true });
        const rates: number[] = [];
        const p99s: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const r = await load(`${base}/apps/${key}/ids`, {
            connections,
            seconds: SECONDS,
            token: secret,
            body: '{"count":1}',
            header: ['idempotency-key', `b${round}-[<id>]`],
          });
          if (r.non2xx) throw new Error(`${backend.name}, ${connections} connections: ${r.non2xx} answers not 2xx`);
          rates.push(r.rps);
          p99s.push(r.p99);
        }
        console.log(
          `${backend.name.padEnd(24)} ${String(connections).padStart(2)} clients: ${fmt(median(rates)).padStart(6)} numbers/s, p99 ${median(p99s)} ms (rounds: ${rates.map(fmt).join(', ')})`,
        );
      }
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      await done();
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
