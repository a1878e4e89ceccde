/**
 * Business numbers beside plain segment ids, one service process, one run:
 * `POST /apps/:key/ids` single (64 connections) and batches of 1,000
 * (16 connections), numbers/s of an entity with a daily `format` against
 * ids/s of a plain monotonic one (issue 35's target: ≥ 0.9×). MariaDB +
 * Redis; rounds alternate the two so drift on a shared machine falls on both.
 */
import Redis from 'ioredis';
import { dropSchema, fmt, freshSchema, registerEntity, startService } from './fixtures/deployment';
import { load } from './fixtures/load';

const REDIS = process.env.IDPOOL_BENCH_REDIS_URL || 'redis://127.0.0.1:6379/14';
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const schema = 'idpool_bench_numbers';
  const url = await freshSchema(schema);
  const prefix = `idpool-bench-numbers-${Date.now()}`;
  const { base, proc } = await startService({
    IDPOOL_DATABASE_URL: url,
    IDPOOL_REDIS_URL: REDIS,
    IDPOOL_REDIS_KEY_PREFIX: prefix,
    IDPOOL_REQUEST_LOG: 'off',
  });
  const port = Number(new URL(base).port);
  const common = { mode: 'monotonic', step: 10_000, maxSizePerSecond: 0, maxPoolSize: 2_000_000 };
  const secrets = {
    plain: await registerEntity(port, { key: 'plain', ...common }),
    numbers: await registerEntity(port, { key: 'numbers', format: 'INV{yyyy}{MM}{dd}-{seq:12}', ...common }),
  };
  const runs: Record<string, number[]> = {};
  try {
    for (const [shape, connections, body, perRequest] of [
      ['single', 64, '{"count":1}', 1],
      ['batch', 16, '{"count":1000}', 1000],
    ] as const) {
      for (let round = 0; round < ROUNDS; round++)
        for (const key of ['plain', 'numbers'] as const) {
          const r = await load(`${base}/apps/${key}/ids`, { connections, seconds: SECONDS, body, token: secrets[key] });
          if (r.non2xx > 0) process.stdout.write(`  (${key} ${shape}: ${r.non2xx} non-2xx)\n`);
          (runs[`${shape} ${key}`] ??= []).push(r.rps * perRequest);
        }
      const plain = median(runs[`${shape} plain`]);
      const numbers = median(runs[`${shape} numbers`]);
      process.stdout.write(
        `${shape.padEnd(6)}  plain ${fmt(plain).padStart(10)} ids/s   business numbers ${fmt(numbers).padStart(10)} numbers/s   ratio ${(numbers / plain).toFixed(2)}×\n`,
      );
    }
  } finally {
    proc.kill('SIGTERM');
    const redis = new Redis(REDIS);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    await dropSchema(schema);
  }
}

void main();
