/**
 * 100,000 entities on one deployment: what they cost and what
 * stays bounded. One service process on MariaDB and a private redis-server.
 * The first 5,000 entities are registered through `POST /admin/apps` with 8
 * clients (the registration rate); the rest are inserted straight into the
 * table in bulk, the way an import lands, and the service picks them up on
 * its next registry refresh and fills one floor of ids for each.
 * Then, with every pool at its floor: Redis memory per entity, the idle
 * instance's CPU and Redis commands per second (the bounded sweep and
 * sampler), `/metrics`, an admin page, the dashboard's data, a take on a busy
 * entity, and how long a second instance takes to start.
 * `BENCH_SCALE_ENTITIES` sets the count (default 100,000).
 */
import { readFileSync, rmSync } from 'node:fs';
import Redis from 'ioredis';
import {
  ADMIN,
  bulkInsert,
  dropSchema,
  fmt,
  freshSchema,
  registerMany,
  startRedis,
  startService,
} from './fixtures/deployment';
import { sleep } from '../test/support/wait';

const COUNT = Number(process.env.BENCH_SCALE_ENTITIES || 100_000);
const THROUGH_API = Math.min(5000, COUNT);

/** CPU seconds a process has used (Linux /proc, user + system). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const get = (base: string, path: string) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } }).then((r) => r.text());

async function main() {
  const schemaName = `idpool_bench_scale_${process.pid}`;
  const url = await freshSchema(schemaName);
  const redisServer = await startRedis();
  const redis = new Redis(redisServer.url);
  const env = { IDPOOL_DATABASE_URL: url, IDPOOL_REDIS_URL: redisServer.url, IDPOOL_REQUEST_LOG: 'false' };
  const service = await startService(env);
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    process.stdout.write(`${line}\n`);
  };
  try {
    const memBefore = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
    const rate = await registerMany(service.base, 'api', THROUGH_API, 8, {});
    say(`registration through the API, 8 clients: ${fmt(rate)} entities/s (${fmt(THROUGH_API)} entities)`);

    const fill = await timed(async () => {
      await bulkInsert(url, THROUGH_API, COUNT);
      // Four keys per entity once its floor is pushed: ids, fence, epoch marker, pushed counter.
      while ((await redis.dbsize()) < COUNT * 4) await sleep(500);
    });
    say(
      `${fmt(COUNT - THROUGH_API)} entities inserted in bulk, picked up and filled to their floor: ${(fill.ms / 1000).toFixed(1)} s (${fmt((COUNT - THROUGH_API) / (fill.ms / 1000))} entities/s)`,
    );
    const memAfter = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
    say(
      `Redis memory: ${fmt((memAfter - memBefore) / 1024 / 1024)} MiB for ${fmt(COUNT)} idle entities, ${((memAfter - memBefore) / COUNT / 1024).toFixed(1)} KiB each`,
    );

    await sleep(3000); // let the last refills settle
    const cmdsBefore = Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))![1]);
    const cpuBefore = cpuSeconds(service.proc.pid!);
    await sleep(10_000);
    const cpu = (cpuSeconds(service.proc.pid!) - cpuBefore) / 10;
    const cmds = (Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))![1]) - cmdsBefore) / 10;
    say(
      `idle, per second: service CPU ${(cpu * 100).toFixed(1)} % of a core, ${fmt(cmds)} Redis commands (sweep and sampler read 1,000 pools a second each)`,
    );

    const metrics = await timed(() => get(service.base, '/metrics'));
    const entityLabels = new Set([...metrics.value.matchAll(/entity="([^"]+)"/g)].map((m) => m[1])).size;
    say(
      `/metrics: ${metrics.ms.toFixed(0)} ms, ${fmt(metrics.value.length / 1024)} KiB, ${fmt(entityLabels)} entities with series`,
    );
    const pages: number[] = [];
    for (let i = 0; i < 5; i++)
      pages.push((await timed(() => get(service.base, `/admin/apps?limit=1000&after=bulk-${i * 10_000}`))).ms);
    say(`GET /admin/apps?limit=1000: median ${median(pages).toFixed(0)} ms`);
    const ops = await timed(() => get(service.base, '/admin/ops'));
    const search = await timed(() => get(service.base, '/admin/ops?q=bulk-4242'));
    say(`GET /admin/ops (busiest 50): ${ops.ms.toFixed(0)} ms; search by key: ${search.ms.toFixed(0)} ms`);

    const secret = JSON.parse(
      await fetch(`${service.base}/admin/apps/api-1/secret`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}` },
      }).then((r) => r.text()),
    ).secret;
    const takes: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const t = await timed(() =>
        fetch(`${service.base}/apps/api-1/ids`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}` },
        }).then((r) => r.arrayBuffer()),
      );
      takes.push(t.ms);
    }
    takes.sort((a, b) => a - b);
    say(
      `one busy entity among ${fmt(COUNT)}: take p50 ${takes[1000].toFixed(2)} ms, p99 ${takes[1980].toFixed(2)} ms (sequential client)`,
    );

    const second = await timed(() => startService(env));
    say(`a second instance starts (loads ${fmt(COUNT)} entities) and listens in ${(second.ms / 1000).toFixed(1)} s`);
    second.value.proc.kill('SIGTERM');
    await new Promise((r) => second.value.proc.once('exit', r));
  } finally {
    service.proc.kill('SIGTERM');
    await new Promise((r) => service.proc.once('exit', r));
    redis.disconnect();
    redisServer.proc.kill('SIGKILL');
    rmSync(redisServer.dir, { recursive: true, force: true });
    await dropSchema(schemaName);
  }
  process.stdout.write(`\n${fmt(COUNT)} entities on one deployment:\n${lines.map((l) => `  ${l}`).join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
