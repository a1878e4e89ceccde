/**
 * Business numbers beside plain segment ids, one service process, one run:
 * `POST /apps/:key/ids` single (64 connections) and batches of 1,000
 * (16 connections), numbers/s of an entity with a daily `format` against
 * ids/s of a plain monotonic one (issue 35's target: ≥ 0.9×). MariaDB and
 * a private Redis; rounds alternate the two so drift on a shared machine
 * falls on both. Beside the rates, what each 1,000 cost the service's CPU
 * and Redis's (`/proc/<pid>/stat`, `INFO cpu`): on a machine shared with
 * other work the rates swing with it, CPU per 1,000 much less.
 */
import { readFileSync, rmSync } from 'node:fs';
import Redis from 'ioredis';
import { dropSchema, fmt, freshSchema, registerEntity, startRedis, startService } from './fixtures/deployment';
import { load } from './fixtures/load';

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const SECONDS = Number(process.env.BENCH_SECONDS || 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU seconds a process has used (user + system), from /proc (clock ticks of 10 ms). */
function processCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds the Redis server has used (INFO cpu). */
async function redisCpu(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

interface Round {
  rate: number;
  serviceUsPer1000: number;
  redisUsPer1000: number;
}

async function main(): Promise<void> {
  const schema = 'idpool_bench_numbers';
  const url = await freshSchema(schema);
  const server = await startRedis();
  const redis = new Redis(server.url);
  const { base, proc } = await startService({
    IDPOOL_DATABASE_URL: url,
    IDPOOL_REDIS_URL: server.url,
    IDPOOL_REQUEST_LOG: 'off',
  });
  const port = Number(new URL(base).port);
  const common = { mode: 'monotonic', step: 10_000, maxSizePerSecond: 0, maxPoolSize: 2_000_000 };
  const secrets = {
    plain: await registerEntity(port, { key: 'plain', ...common }),
    numbers: await registerEntity(port, { key: 'numbers', format: 'INV{yyyy}{MM}{dd}-{seq:12}', ...common }),
  };
  const runs: Record<string, Round[]> = {};
  try {
    for (const [shape, connections, body, perRequest] of [
      ['single', 64, '{"count":1}', 1],
      ['batch', 16, '{"count":1000}', 1000],
    ] as const) {
      for (let round = 0; round < ROUNDS; round++)
        // Each round runs both, in turn first: a drift of the machine's speed within a round falls on both alike.
        for (const key of round % 2 === 0 ? (['plain', 'numbers'] as const) : (['numbers', 'plain'] as const)) {
          const [service0, redis0] = [processCpu(proc.pid ?? 0), await redisCpu(redis)];
          const r = await load(`${base}/apps/${key}/ids`, { connections, seconds: SECONDS, body, token: secrets[key] });
          const [service1, redis1] = [processCpu(proc.pid ?? 0), await redisCpu(redis)];
          if (r.non2xx > 0) process.stdout.write(`  (${key} ${shape}: ${r.non2xx} non-2xx)\n`);
          const thousands = (r.rps * perRequest * SECONDS) / 1000;
          (runs[`${shape} ${key}`] ??= []).push({
            rate: r.rps * perRequest,
            serviceUsPer1000: ((service1 - service0) * 1e6) / thousands,
            redisUsPer1000: ((redis1 - redis0) * 1e6) / thousands,
          });
        }
      const of = (key: string, field: keyof Round) => median(runs[`${shape} ${key}`].map((r) => r[field]));
      const ratio = (field: keyof Round) => (of('numbers', field) / of('plain', field)).toFixed(2);
      // The two runs of a round are seconds apart: their ratio is the least disturbed by the machine's drift.
      const perRound = runs[`${shape} numbers`].map((r, i) => r.rate / runs[`${shape} plain`][i].rate);
      process.stdout.write(
        `${shape.padEnd(6)}  plain ${fmt(of('plain', 'rate')).padStart(10)} ids/s   business numbers ${fmt(of('numbers', 'rate')).padStart(10)} numbers/s   ratio ${ratio('rate')}×; ` +
          `per round ${perRound.map((r) => r.toFixed(2)).join(', ')} (median ${median(perRound).toFixed(2)}×)\n` +
          `        CPU per 1,000: service ${fmt(of('plain', 'serviceUsPer1000'))} µs plain, ${fmt(of('numbers', 'serviceUsPer1000'))} µs numbers (${ratio('serviceUsPer1000')}×); ` +
          `Redis ${fmt(of('plain', 'redisUsPer1000'))} µs plain, ${fmt(of('numbers', 'redisUsPer1000'))} µs numbers (${ratio('redisUsPer1000')}×)\n`,
      );
    }
  } finally {
    proc.kill('SIGTERM');
    redis.disconnect();
    server.proc.kill('SIGTERM');
    rmSync(server.dir, { recursive: true, force: true });
    await dropSchema(schema);
  }
}

void main();
