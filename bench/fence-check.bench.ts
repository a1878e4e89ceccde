/**
 * What one fence check run costs at N entities (`BENCH_FENCE_ENTITIES`,
 * default 10,000): every entity's fence GET in one pipeline to a private
 * redis-server, then one SQL query of every offset on MariaDB (a fresh
 * schema on IDPOOL_TEST_MYSQL_URL's server), with no entity behind, which
 * is every run but the one after a restore. Then the same with every
 * entity behind: the run that carries a whole restored database.
 *
 *   npx tsx bench/fence-check.bench.ts      (or `npm run bench -- fence-check`)
 *
 * Figures only; a benchmark asserts nothing.
 */
import Redis from 'ioredis';
import { systemClock } from '../src/clock';
import { openDatabase } from '../src/db/database';
import { type Logger, silentLogger } from '../src/logger';
import { loggingRefillEvents } from '../src/ops/observers';
import { FenceCarrier } from '../src/pool/fence-carry';
import { FenceCheck } from '../src/pool/fence-check';
import { entityKeys } from '../src/redis/keys';
import { RedisRefillLock } from '../src/pool/refill-lock';
import { RedisPoolStore } from '../src/pool/redis-pool-store';
import { SqlSegmentAllocator } from '../src/segment/allocator';
import { IdStride } from '../src/segment/stride';
import { bulkInsert, dropSchema, fmt, freshSchema, startRedis } from './fixtures/deployment';

const COUNT = Number(process.env.BENCH_FENCE_ENTITIES || 10_000);
const RUNS = 20;
const PREFIX = 'bench';

async function main() {
  const schemaName = `idpool_bench_fence_${process.pid}`;
  const url = await freshSchema(schemaName);
  const redisServer = await startRedis();
  const redis = new Redis(redisServer.url);
  const db = await openDatabase(url);
  try {
    await bulkInsert(url, 0, COUNT);
    const keys = Array.from({ length: COUNT }, (_, n) => `bulk-${n}`);
    // Every entity pushed up to 999: its fence; the database holds 1,000 (each row's current_offset after one segment).
    await db.execute('UPDATE application SET current_offset = 1000');
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.set(entityKeys(key, PREFIX).fence, '999');
    await pipeline.exec();
    const allocator = new SqlSegmentAllocator(db);
    const store = new RedisPoolStore(redis, PREFIX);
    const stride = new IdStride();
    const failures: string[] = [];
    const log: Logger = { ...silentLogger, warn: (obj) => void failures.push(JSON.stringify(obj)) };
    const check = new FenceCheck({
      entities: { segmentKeys: () => keys },
      offsets: allocator,
      store,
      lock: new RedisRefillLock(redis, systemClock, 1000, PREFIX),
      carrier: new FenceCarrier({
        entities: { get: () => undefined },
        allocator,
        store,
        stride,
        events: loggingRefillEvents(silentLogger, { get: () => undefined }, stride),
      }),
      clock: systemClock,
      log,
      intervalMs: 0,
    });
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      await check.run();
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const cpu = process.cpuUsage();
    for (let i = 0; i < RUNS; i++) await check.run();
    const used = process.cpuUsage(cpu);
    console.log(
      `${fmt(COUNT)} entities, none behind: a run takes ${times[RUNS / 2].toFixed(1)} ms median, ${times[RUNS - 1].toFixed(1)} ms the slowest of ${RUNS}; ` +
        `${((used.user + used.system) / 1000 / RUNS).toFixed(1)} ms of this process's CPU a run`,
    );
    // The restore: every row back to 0, below its fence.
    await db.execute('UPDATE application SET current_offset = 0');
    const started = performance.now();
    await check.run();
    const behind = Number(
      (await db.query<{ n: string }>('SELECT COUNT(*) AS n FROM application WHERE current_offset < 1000'))[0].n,
    );
    console.log(
      `${fmt(COUNT)} entities, all behind: the run that carries them takes ${(performance.now() - started).toFixed(0)} ms; ${behind} left behind after it${failures.length ? `; failures: ${failures.slice(0, 3).join(' ')}` : ''}`,
    );
  } finally {
    redis.disconnect();
    await db.close();
    redisServer.proc.kill('SIGKILL');
    await dropSchema(schemaName);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
