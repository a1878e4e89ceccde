/**
 * Registration rate: entities/s through `POST /admin/apps` with 1
 * and 8 concurrent clients, on MariaDB + a private redis-server, one service
 * process. Two shapes side by side:
 *  - "small pools" (step 100, maxPoolSize 1,000): the registration path
 *    itself (validation, secret, one INSERT, the first refill of one pool);
 *  - "defaults": every pool filled to maxPoolSize = 60 × maxSizePerSecond =
 *    300,000 ids right after registration, the cost that demand-sized pools
 *    remove.
 * Beside them, the floor under the path: raw single-row INSERTs into the same
 * table from this process with 1 and 8 connections.
 */
import { rmSync } from 'node:fs';
import { createPool } from 'mysql2/promise';
import { dropSchema, fmt, freshSchema, registerMany, startRedis, startService } from './fixtures/deployment';
/** Entities per measurement: enough for several seconds at the 500/s target. */
const COUNT = Number(process.env.BENCH_REGISTER_COUNT || 3000);

/** Raw INSERTs of the same row shape: the database's own ceiling for this path. */
async function rawInserts(url: string, count: number, connections: number): Promise<number> {
  const pool = createPool({ uri: url, connectionLimit: connections });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < count) {
        const i = next++;
        await pool.execute(
          `INSERT INTO application (entity_key, entity_name, id_mode, increasing_type, start_offset, step, current_offset, max_size_per_times, max_size_per_second, min_size_percent, \`interval\`, max_pool_size, secret_hash, create_time, update_time, deleted_at)
           VALUES (?, ?, 'segment', 1, 0, 100, 0, 100, 0, 80, 100, 1000, ?, ?, ?, 0)`,
          [`raw-${connections}-${i}`, `raw-${i}`, 'f'.repeat(64), Date.now(), Date.now()],
        );
      }
    }),
  );
  const rate = count / ((performance.now() - started) / 1000);
  await pool.end();
  return rate;
}

async function main() {
  // Default pools hold 300,000 ids (~3 MB of Redis) each: 200 of them are already 600 MB, so that shape registers fewer.
  const shapes: { name: string; body: Record<string, unknown>; count: number }[] = [
    {
      name: 'small pools (step 100, maxPoolSize 1,000)',
      body: { step: 100, maxPoolSize: 1000, maxSizePerTimes: 100 },
      count: COUNT,
    },
    { name: 'defaults (pool filled to 300,000 ids)', body: {}, count: 200 },
  ];
  const rows: string[] = [];
  for (const shape of shapes) {
    const schemaName = `idpool_bench_register_${process.pid}`;
    const url = await freshSchema(schemaName);
    const redis = await startRedis();
    const service = await startService({ IDPOOL_DATABASE_URL: url, IDPOOL_REDIS_URL: redis.url });
    try {
      // Warm-up: connections, JIT, the first migration-time caches.
      await registerMany(service.base, 'warm', 20, 4, shape.body);
      const one = await registerMany(service.base, 'c1', Math.min(shape.count, 1000), 1, shape.body);
      process.stdout.write(`${shape.name}: 1 client ${fmt(one)} entities/s\n`);
      const eight = await registerMany(service.base, 'c8', shape.count, 8, shape.body);
      process.stdout.write(`${shape.name}: 8 clients ${fmt(eight)} entities/s\n`);
      rows.push(
        `${`${shape.name}, ${fmt(shape.count)}`.padEnd(50)} 1 client ${fmt(one).padStart(6)} entities/s   8 clients ${fmt(eight).padStart(6)} entities/s`,
      );
    } finally {
      service.proc.kill('SIGTERM');
      await new Promise((r) => service.proc.once('exit', r));
      redis.proc.kill('SIGKILL');
      rmSync(redis.dir, { recursive: true, force: true });
    }
    if (shape === shapes[0]) {
      const one = await rawInserts(url, 1000, 1);
      const eight = await rawInserts(url, COUNT, 8);
      rows.push(
        `${'raw INSERT (mysql2, same row)'.padEnd(50)} 1 conn   ${fmt(one).padStart(6)} rows/s       8 conns   ${fmt(eight).padStart(6)} rows/s`,
      );
      process.stdout.write(`${rows.at(-1)}\n`);
    }
    await dropSchema(schemaName);
  }
  process.stdout.write(
    `registration through POST /admin/apps (1 client registers at most 1,000):\n${rows.join('\n')}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
