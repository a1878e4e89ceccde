/**
 * `npm run bench -- refill-lock`: what the refill lock's lease must cover,
 * and what a dead holder costs. Real MariaDB (a schema of its own), a
 * private redis-server, real processes.
 *
 * - refill: how long a refill holds the lock, under load, with large steps
 *   (maxPoolSize 5,000,000, step 1,000,000: one refill reserves and pushes
 *   5M ids) and with the default step (1,000). Load: four HTTP clients
 *   taking 1,000 ids at a time from another entity of the same process.
 *   Also the least PTTL the lock showed during the large refills (read every
 *   5 ms by another process: how close a live holder came to losing its
 *   lease), and the longest event-loop stall (what delays a renewal).
 * - kill: an instance stalled mid-refill holds an entity's lock while two
 *   others take from it; 1.5 s after it took the lock it is `kill -9`'d;
 *   the ms until each survivor serves the entity again. Three runs.
 *
 * REFILL_LOCK_BENCH=refill or =kill runs one part. Figures, not assertions.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Redis from 'ioredis';
import { loadConfig } from '../src/config/config';
import { entityKeys } from '../src/redis/keys';
import { createService } from '../src/service';
import { serviceParts } from '../src/service/internals';
import { uniqueKey } from '../test/support/configs';
import { register, takeIds } from '../test/support/http';
import { startRedisServer, waitExit } from '../test/support/processes';
import { faultHolder, stalledRefill } from '../test/support/refill-holder';
import { createTestSchema } from '../test/support/services';
import { sleep, waitFor } from '../test/support/wait';

const parts = (process.env.REFILL_LOCK_BENCH ?? 'refill,kill').split(',');

const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const ms = (x: number) => `${Math.round(x)} ms`;

async function refillTimes(redisUrl: string, databaseUrl: string): Promise<void> {
  const config = loadConfig({
    IDPOOL_DATABASE_URL: databaseUrl,
    IDPOOL_REDIS_URL: redisUrl,
    IDPOOL_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef',
    IDPOOL_WORKER_ID: '1',
    IDPOOL_WORKER_ID_UNSAFE: '1',
  });
  const service = await createService(config);
  const direct = new Redis(redisUrl);
  try {
    const port = await service.listen(0);
    const url = `http://127.0.0.1:${port}`;
    const loadKey = uniqueKey('load');
    const secret = await register(url, { key: loadKey, maxSizePerSecond: 0, maxSizePerTimes: 1000 });
    let running = true;
    let served = 0;
    const clients = [0, 1, 2, 3].map(async () => {
      while (running) {
        const res = await takeIds(url, loadKey, secret, 1000);
        if (res.status === 200) served += res.body.ids.length;
        else await sleep(10);
      }
    });
    await sleep(1000);
    // Refills of the default floor: a new entity's first fill (1,000 ids).
    const small: number[] = [];
    for (let run = 0; run < 30; run++) {
      const key = uniqueKey('small');
      await serviceParts(service).registry.register({ key, mode: 'monotonic', maxSizePerSecond: 0 });
      const started = performance.now();
      await serviceParts(service).refiller.refill(key);
      small.push(performance.now() - started);
    }
    console.log(
      `step 1,000 (default), a first fill of 1,000 ids: lock held p50 ${ms(quantile(small, 0.5))}, max ${ms(Math.max(...small))} (30 refills)`,
    );
    for (const mode of ['monotonic', 'trend'] as const) {
      const key = uniqueKey('big');
      await serviceParts(service).registry.register({
        key,
        mode,
        step: 1_000_000,
        maxPoolSize: 5_000_000,
        maxSizePerSecond: 0,
      });
      await serviceParts(service).refiller.refill(key); // the first fill, not counted
      const held: number[] = [];
      const lease = { least: Infinity, lapsed: 0 };
      const stalls = monitorEventLoopDelay({ resolution: 5 });
      stalls.enable();
      for (let run = 0; run < 3; run++) {
        await direct.del(entityKeys(key).ids); // drained, as by direct pops
        const watch = await watchLock(redisUrl, entityKeys(key).lock);
        const started = performance.now();
        await serviceParts(service).refiller.refill(key, 5_000_000);
        held.push(performance.now() - started);
        const seen = await watch();
        lease.least = Math.min(lease.least, seen.least);
        lease.lapsed += seen.lapsed;
      }
      stalls.disable();
      const size = await direct.llen(entityKeys(key).ids);
      console.log(
        `step 1,000,000 ${mode}, refills of 5,000,000 ids (pooled after the last: ${size.toLocaleString('en')}): ` +
          `lock held p50 ${ms(quantile(held, 0.5))}, max ${ms(Math.max(...held))} (3 refills); ` +
          `least lock PTTL seen ${ms(lease.least)}, lock gone while held ${lease.lapsed} times; ` +
          `event loop stall p99 ${ms(stalls.percentile(99) / 1e6)}, max ${ms(stalls.max / 1e6)}`,
      );
      await direct.del(entityKeys(key).ids);
    }
    running = false;
    await Promise.all(clients);
    console.log(`load: ${served.toLocaleString('en')} ids served to the four clients meanwhile`);
  } finally {
    direct.disconnect();
    await service.stop();
  }
}

/**
 * Reads the lock's PTTL every 5 ms from a process of its own (this one's
 * event loop is what stalls): resolves to a stop function that answers the
 * least PTTL seen while the lock existed, and how often it was gone between
 * its first and last sighting (the lease lapsed under a live holder).
 */
async function watchLock(redisUrl: string, key: string): Promise<() => Promise<{ least: number; lapsed: number }>> {
  const script = `
    const Redis = require('ioredis');
    const redis = new Redis(process.argv[1]);
    const seen = [];
    let running = true;
    process.on('SIGTERM', () => (running = false));
    (async () => {
      await redis.ping();
      process.stdout.write('ready\\n');
      while (running) {
        seen.push(await redis.pttl(process.argv[2]));
        await new Promise((r) => setTimeout(r, 5));
      }
      const first = seen.findIndex((t) => t > 0);
      const last = seen.length - 1 - [...seen].reverse().findIndex((t) => t > 0);
      const held = first < 0 ? [] : seen.slice(first, last + 1);
      const least = Math.min(...held.filter((t) => t > 0));
      process.stdout.write(JSON.stringify({ least, lapsed: held.filter((t) => t < 0).length }) + '\\n');
      redis.disconnect();
    })();`;
  const child = spawn(process.execPath, ['-e', script, redisUrl, key], { cwd: join(__dirname, '..') });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(() => out.includes('ready'));
  return async () => {
    child.kill('SIGTERM');
    await waitExit(child);
    return JSON.parse(out.split('\n')[1]) as { least: number; lapsed: number };
  };
}

async function killedHolder(redisUrl: string, databaseUrl: string): Promise<void> {
  const direct = new Redis(redisUrl);
  try {
    for (let run = 0; run < 3; run++) {
      const key = uniqueKey('killed');
      const env = { IDPOOL_DATABASE_URL: databaseUrl, IDPOOL_REDIS_URL: redisUrl };
      const stalled = await stalledRefill(env, key, { survivorsFirst: true });
      try {
        const result = await faultHolder(stalled, key, direct, () => stalled.holder.kill9(), {
          holdMs: 1500,
          limitMs: 20_000,
        });
        const repeated = result.ids.length - new Set(result.ids).size;
        console.log(
          `kill -9 of the holder, run ${run + 1}: lock PTTL at the kill ${result.lock.pttl} ms; ` +
            `ids again on the survivors after ${result.toIds.map(ms).join(' / ')}; ` +
            `served while held ${result.servedWhileHeld}, ids repeated ${repeated}, other answers ${result.unexpected.length}`,
        );
      } finally {
        await stalled.stop();
      }
    }
  } finally {
    direct.disconnect();
  }
}

async function main(): Promise<void> {
  const schema = await createTestSchema();
  const redis = await startRedisServer('none');
  try {
    if (parts.includes('refill')) await refillTimes(redis.url, schema.url);
    if (parts.includes('kill')) await killedHolder(redis.url, schema.url);
  } finally {
    await redis.stop();
    await schema.drop();
  }
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
