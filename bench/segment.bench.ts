/**
 * Segment pool benchmarks, with the snowflake HTTP figures
 * side by side in one run on this machine:
 *  1. single-id POST /apps/:key/ids, 64 connections (idpool on MariaDB+Redis,
 *     idpool embedded on SQLite+memory) beside a bare express 5 route;
 *  2. batches of 1,000: ids/s beside raw ioredis `LPOP key 1000`;
 *  3. refill capacity of one refiller beside raw batched RPUSH, and a pool fed
 *     at max_size_per_second that must never run dry;
 *  4. Redis memory per pooled id.
 * Load comes from autocannon in this process; each server is its own process.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { loadConfig } from '../src/config/config';
import { createService } from '../src/service';
import { serviceParts } from '../src/service/internals';
import { BARE_TOKEN } from './fixtures/bare-answer';
import { ADMIN, fmt, freshSchema, registerEntity, startServer, waitPool } from './fixtures/deployment';
import { entityKeys } from '../src/redis/keys';

import { type Load, load } from './fixtures/load';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- autocannon is CommonJS with no types of its own
const autocannon = require('autocannon');

const ROOT = join(__dirname, '..');
const REDIS = process.env.IDPOOL_BENCH_REDIS_URL || 'redis://127.0.0.1:6379/14';
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 5);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function rawLpop(redis: Redis, seconds: number): Promise<number> {
  const key = 'idpool-bench:{raw}:ids';
  await redis.del(key);
  const chunk = Array.from({ length: 10_000 }, (_, i) => String(1_000_000_000 + i));
  for (let i = 0; i < 300; i++) await redis.rpush(key, ...chunk); // 3M ids
  let taken = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (Date.now() < until) {
        const ids = await redis.lpop(key, 1000);
        if (!ids) break;
        taken += ids.length;
      }
    }),
  );
  const elapsed = (seconds * 1000 - Math.max(0, until - Date.now())) / 1000;
  await redis.del(key);
  return taken / elapsed;
}

async function rawRpush(redis: Redis, total: number): Promise<number> {
  const key = 'idpool-bench:{rawpush}:ids';
  await redis.del(key);
  const started = performance.now();
  for (let from = 0; from < total; from += 10_000) {
    const ids: string[] = [];
    for (let i = from; i < from + 10_000; i++) ids.push(String(i));
    await redis.rpush(key, ...ids);
  }
  const seconds = (performance.now() - started) / 1000;
  await redis.del(key);
  return total / seconds;
}

async function refillCapacity(
  redis: Redis,
  total: number,
): Promise<{ idsPerSecond: number; bytesPerIdSmall: number; bytesPerIdLarge: number }> {
  const url = await freshSchema('idpool_bench_refill');
  const config = loadConfig({
    IDPOOL_DATABASE_URL: url,
    IDPOOL_REDIS_URL: REDIS,
    IDPOOL_ADMIN_TOKEN: ADMIN,
    IDPOOL_WORKER_ID: '1',
    IDPOOL_WORKER_ID_UNSAFE: '1',
  });
  const prefix = `idpool-bench-${Date.now()}`;
  const service = await createService(config, { redisPrefix: prefix });
  try {
    const run = async (key: string, startOffset: bigint) => {
      // Pools are sized by demand: an idle pool's first refill pushes one floor = one step, so one step is the refill measured.
      await serviceParts(service).registry.register({
        key,
        mode: 'monotonic',
        step: total / 2,
        maxPoolSize: total,
        minSizePercent: 50,
        maxSizePerSecond: 0,
        startOffset,
      });
      serviceParts(service).refiller.markReset(key);
      const started = performance.now();
      await serviceParts(service).refiller.refill(key);
      const seconds = (performance.now() - started) / 1000;
      const size = await serviceParts(service).poolStore.size(key);
      const bytes = Number(await redis.call('MEMORY', 'USAGE', entityKeys(key, prefix).ids, 'SAMPLES', '0'));
      return { idsPerSecond: size / seconds, bytesPerId: bytes / size };
    };
    const small = await run('small', 0n);
    const large = await run('large', 2n ** 40n); // ids around 1.1e12, as after years of use
    await redis.del(`${prefix}:{small}:ids`, `${prefix}:{large}:ids`);
    return {
      idsPerSecond: Math.max(small.idsPerSecond, large.idsPerSecond),
      bytesPerIdSmall: small.bytesPerId,
      bytesPerIdLarge: large.bytesPerId,
    };
  } finally {
    await service.stop();
  }
}

async function main() {
  const redis = new Redis(REDIS);
  const sqliteDir = mkdtempSync(join(tmpdir(), 'idpool-bench-'));
  const servers: ChildProcess[] = [];
  try {
    const bare = await startServer([join(__dirname, 'fixtures', 'bare-express.ts')], {});
    servers.push(bare.proc);
    const url = await freshSchema('idpool_bench');
    const svc = await startServer([join(ROOT, 'src', 'main.ts')], {
      IDPOOL_DATABASE_URL: url,
      IDPOOL_REDIS_URL: REDIS,
    });
    servers.push(svc.proc);
    const emb = await startServer([join(ROOT, 'src', 'main.ts')], {
      IDPOOL_DATABASE_URL: `sqlite:${join(sqliteDir, 'idpool.db')}`,
    });
    servers.push(emb.proc);

    const key = `bench_${Date.now()}`;
    const entity = {
      key,
      step: 10_000,
      maxPoolSize: 2_000_000,
      minSizePercent: 50,
      maxSizePerSecond: 0,
      maxSizePerTimes: 1000,
    };
    const svcSecret = await registerEntity(svc.port, entity);
    const sfKey = `sf_${Date.now()}`;
    const sfSecret = await registerEntity(svc.port, { key: sfKey, mode: 'snowflake', maxSizePerSecond: 0 }); // unlimited: the snowflake limit is enforced now
    const embSecret = await registerEntity(emb.port, entity);
    // One floor (a step) each; the load itself deepens the pools (they are sized by demand).
    await waitPool(svc.port, key, entity.step);
    await waitPool(emb.port, key, entity.step);

    const results: Record<string, Load[]> = {
      bare: [],
      redisSingle: [],
      embeddedSingle: [],
      snowflakeSingle: [],
      redisBatch: [],
      embeddedBatch: [],
      snowflakeBatch: [],
    };
    const lpop: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      results.bare.push(
        await load(`http://127.0.0.1:${bare.port}/ids`, { connections: 64, seconds: SECONDS, token: BARE_TOKEN }),
      );
      results.redisSingle.push(
        await load(`http://127.0.0.1:${svc.port}/apps/${key}/ids`, {
          connections: 64,
          seconds: SECONDS,
          token: svcSecret,
        }),
      );
      results.embeddedSingle.push(
        await load(`http://127.0.0.1:${emb.port}/apps/${key}/ids`, {
          connections: 64,
          seconds: SECONDS,
          token: embSecret,
        }),
      );
      results.snowflakeSingle.push(
        await load(`http://127.0.0.1:${svc.port}/apps/${sfKey}/ids`, {
          connections: 64,
          seconds: SECONDS,
          token: sfSecret,
        }),
      );
      results.snowflakeBatch.push(
        await load(`http://127.0.0.1:${svc.port}/apps/${sfKey}/ids`, {
          connections: 16,
          seconds: SECONDS,
          token: sfSecret,
          body: '{"count":1000}',
        }),
      );
      results.redisBatch.push(
        await load(`http://127.0.0.1:${svc.port}/apps/${key}/ids`, {
          connections: 16,
          seconds: SECONDS,
          token: svcSecret,
          body: '{"count":1000}',
        }),
      );
      results.embeddedBatch.push(
        await load(`http://127.0.0.1:${emb.port}/apps/${key}/ids`, {
          connections: 16,
          seconds: SECONDS,
          token: embSecret,
          body: '{"count":1000}',
        }),
      );
      lpop.push(await rawLpop(redis, SECONDS));
      process.stdout.write(`round ${round + 1}/${ROUNDS} done\n`);
    }
    const m = (name: string) => ({
      rps: median(results[name].map((r) => r.rps)),
      p99: median(results[name].map((r) => r.p99)),
      non2xx: results[name].reduce((a, r) => a + r.non2xx, 0),
    });
    const bareM = m('bare');
    const rows: [string, string, string, string][] = [];
    const single = (name: string, label: string) => {
      const x = m(name);
      rows.push([
        label,
        `${fmt(x.rps)} req/s`,
        `p99 ${x.p99} ms`,
        `${(x.rps / bareM.rps).toFixed(2)}x bare express (target >= 0.8); non-2xx ${x.non2xx}`,
      ]);
    };
    rows.push(['bare express 5 route, 64 conns', `${fmt(bareM.rps)} req/s`, `p99 ${bareM.p99} ms`, '1.00x']);
    single('redisSingle', 'idpool single id (MariaDB+Redis), 64 conns');
    single('embeddedSingle', 'idpool single id (SQLite+memory), 64 conns');
    single('snowflakeSingle', 'idpool snowflake single id, 64 conns');
    const lpopM = median(lpop);
    rows.push(['raw ioredis LPOP key 1000, 64 in flight', `${fmt(lpopM)} ids/s`, '', '1.00x']);
    for (const [name, label] of [
      ['redisBatch', 'idpool batch 1000 (MariaDB+Redis), 16 conns'],
      ['embeddedBatch', 'idpool batch 1000 (SQLite+memory), 16 conns'],
      ['snowflakeBatch', 'idpool snowflake batch 1000, 16 conns'],
    ] as const) {
      const x = m(name);
      rows.push([
        label,
        `${fmt(x.rps * 1000)} ids/s`,
        `p99 ${x.p99} ms`,
        `${((x.rps * 1000) / lpopM).toFixed(2)}x raw LPOP (target >= 0.5, >= 1M ids/s); non-2xx ${x.non2xx}`,
      ]);
    }

    // Refill capacity and memory: in-process, one refiller, no HTTP load.
    const pushTotal = 2_000_000;
    const raw = await rawRpush(redis, pushTotal);
    const refill = await refillCapacity(redis, pushTotal);
    rows.push(['raw batched RPUSH (10k per call)', `${fmt(raw)} ids/s`, '', '1.00x']);
    rows.push([
      'one refiller (reserve + fenced push)',
      `${fmt(refill.idsPerSecond)} ids/s`,
      '',
      `${(refill.idsPerSecond / raw).toFixed(2)}x raw RPUSH (target >= 0.8)`,
    ]);
    rows.push([
      'Redis memory per pooled id (ids < 2^32)',
      `${refill.bytesPerIdSmall.toFixed(2)} bytes`,
      '',
      'target <= 12',
    ]);
    rows.push([
      'Redis memory per pooled id (ids ~ 2^40)',
      `${refill.bytesPerIdLarge.toFixed(2)} bytes`,
      '',
      'target <= 12',
    ]);

    // A pool fed at max_size_per_second never runs dry: drain at the limit.
    const fedKey = `fed_${Date.now()}`;
    const fedSecret = await registerEntity(svc.port, {
      key: fedKey,
      step: 10_000,
      maxSizePerSecond: 100_000,
      maxSizePerTimes: 1000,
      maxPoolSize: 200_000,
      minSizePercent: 50,
    });
    await waitPool(svc.port, fedKey, 10_000); // its floor: the drain starts from an idle pool
    const fed = await new Promise<{ ok: number; limited: number; dry: number }>((resolve, reject) => {
      const counts = { ok: 0, limited: 0, dry: 0 };
      const instance = autocannon(
        {
          url: `http://127.0.0.1:${svc.port}/apps/${fedKey}/ids`,
          method: 'POST',
          connections: 16,
          duration: SECONDS * 2,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${fedSecret}` },
          body: '{"count":1000}',
        },
        (err: Error | null) => (err ? reject(err) : resolve(counts)),
      );
      instance.on('response', (_c: unknown, status: number) => {
        if (status === 200) counts.ok++;
        else if (status === 429) counts.limited++;
        else if (status === 503) counts.dry++;
      });
    });
    rows.push([
      'pool fed at max_size_per_second (100k/s, pool 2 s deep)',
      `${fmt((fed.ok * 1000) / (SECONDS * 2))} ids/s served`,
      '',
      `${fed.dry} x 503 pool_exhausted (target 0), ${fed.limited} x 429`,
    ]);

    const width = Math.max(...rows.map((r) => r[0].length));
    process.stdout.write(
      `\nsegment pool, ${ROUNDS} rounds of ${SECONDS} s, medians (node ${process.version}, 2 cores)\n`,
    );
    for (const r of rows)
      process.stdout.write(`${r[0].padEnd(width)}  ${r[1].padStart(18)}  ${r[2].padStart(11)}  ${r[3]}\n`);
  } finally {
    for (const p of servers) p.kill('SIGTERM');
    redis.disconnect();
    rmSync(sqliteDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
