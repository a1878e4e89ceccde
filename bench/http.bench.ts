/**
 * The HTTP hot path beside the frameworks it runs on, in one run on the same
 * runtime (`npm run bench -- http`):
 *  - bare `node:http` and bare express 5 (JSON body, bearer check, a constant
 *    answer of `count` ids: bench/fixtures/bare-*.ts);
 *  - idpool's `POST /apps/:key/ids` on MariaDB + a private redis-server:
 *    segment single id and batch of 1,000, snowflake single and batch;
 *  - the same single-id route with IDPOOL_REQUEST_LOG=all and =off beside
 *    the default (errors), for the request log's cost;
 *  - the raw Redis cycle a batch costs at best: RPUSH 1,000 ids and LPOP
 *    1,000 through one list with ioredis, 64 loops, no idpool.
 * Targets rotate within each round (so a burst of load elsewhere on this
 * shared machine hits one round of each, not all rounds of one); figures are
 * medians of BENCH_ROUNDS (default 3) runs of BENCH_SECONDS (default 5) at
 * 64 connections, each server its own process. Server CPU per request comes
 * from /proc: it swings far less with other load than throughput does. So
 * does the redis-server's, per request of each target: Redis is the one
 * process every instance of a deployment shares.
 * A benchmark prints figures; it asserts nothing.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { BARE_TOKEN } from './fixtures/bare-answer';
import { dropSchema, fmt, freshSchema, registerEntity, startRedis, startServer, waitPool } from './fixtures/deployment';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- autocannon is CommonJS with no types of its own
const autocannon = require('autocannon');

const ROOT = join(__dirname, '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 5);
const CONNECTIONS = 64;
const BATCH = 1000;
/** IDPOOL_REQUEST_LOG values for the log-cost rows (the default instance runs with the variable unset). */
const LOG_ALL = process.env.BENCH_LOG_ALL || 'all';
const LOG_OFF = process.env.BENCH_LOG_OFF || 'off';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Figures {
  /** Requests (or, for the raw cycle, LPOPs of 1,000) per second. */
  rps: number;
  p99: number;
  non2xx: number;
  /** Server CPU (user + system) per request, µs; NaN where there is no server process. */
  cpuUs: number;
  /** The redis-server's CPU per request (or cycle), µs: what one batch costs the process every instance shares. */
  redisUs: number;
}

/** CPU seconds a process has used (Linux /proc, user + system, 100 Hz ticks). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function cannon(
  url: string,
  token: string,
  count: number,
  seconds: number,
): Promise<{ rps: number; total: number; p99: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections: CONNECTIONS,
        duration: seconds,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ count }),
      },
      (
        err: Error | null,
        r: { requests: { average: number; total: number }; latency: { p99: number }; non2xx: number; errors: number },
      ) => {
        if (err) reject(err);
        else
          resolve({
            rps: r.requests.average,
            total: r.requests.total,
            p99: r.latency.p99,
            non2xx: r.non2xx + r.errors,
          });
      },
    );
  });
}

async function http(url: string, token: string, count: number, pid: number, seconds: number): Promise<Figures> {
  const cpu0 = cpuSeconds(pid);
  const r = await cannon(url, token, count, seconds);
  return {
    rps: r.rps,
    p99: r.p99,
    non2xx: r.non2xx,
    cpuUs: ((cpuSeconds(pid) - cpu0) * 1e6) / Math.max(1, r.total),
    redisUs: Number.NaN,
  };
}

/** RPUSH 1,000 ids then LPOP 1,000, in 64 loops over one list: what Redis does per batch when idpool adds nothing. */
async function redisCycle(redis: Redis, seconds: number): Promise<Figures> {
  const key = 'idpool-bench:{cycle}:ids';
  const ids = Array.from({ length: BATCH }, (_, i) => String(1_000_000_000_000 + i));
  await redis.del(key);
  let pops = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        await redis.rpush(key, ...ids);
        const popped = await redis.lpop(key, BATCH);
        if (popped?.length === BATCH) pops++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await redis.del(key);
  latencies.sort((a, b) => a - b);
  return {
    rps: pops / elapsed,
    p99: Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0),
    non2xx: 0,
    cpuUs: Number.NaN,
    redisUs: Number.NaN,
  };
}

async function main() {
  const schema = `idpool_bench_http_${process.pid}`;
  const dbUrl = await freshSchema(schema);
  const redisServer = await startRedis();
  const redis = new Redis(redisServer.url);
  const servers: ChildProcess[] = [redisServer.proc];
  const load0 = loadavg();
  try {
    const express = await startServer([join(__dirname, 'fixtures', 'bare-express.ts')], {});
    const node = await startServer([join(__dirname, 'fixtures', 'bare-node.ts')], {});
    servers.push(express.proc, node.proc);
    const idpoolEnv = { IDPOOL_DATABASE_URL: dbUrl, IDPOOL_REDIS_URL: redisServer.url };
    // One instance per kind of load: a batch round deepens its entity's pool
    // (demand), and refilling it in the background must not weigh on the
    // single-id rounds that follow.
    const svc = await startServer([join(ROOT, 'src', 'main.ts')], idpoolEnv);
    servers.push(svc.proc);
    const batchSvc = await startServer([join(ROOT, 'src', 'main.ts')], idpoolEnv);
    servers.push(batchSvc.proc);
    const sfSvc = await startServer([join(ROOT, 'src', 'main.ts')], idpoolEnv);
    servers.push(sfSvc.proc);
    // The default layout (11 sequence bits) caps one entity at 2,048 ids a
    // millisecond; 16 sequence bits (5-bit worker ids, 32 instances) cap it
    // at 65,536, far above what one process makes: the code path, not a cap.
    const sfWide = await startServer([join(ROOT, 'src', 'main.ts')], {
      ...idpoolEnv,
      IDPOOL_SNOWFLAKE_WORKER_BITS: '5',
    });
    servers.push(sfWide.proc);
    const logAll = await startServer([join(ROOT, 'src', 'main.ts')], { ...idpoolEnv, IDPOOL_REQUEST_LOG: LOG_ALL });
    servers.push(logAll.proc);
    const logOff = await startServer([join(ROOT, 'src', 'main.ts')], { ...idpoolEnv, IDPOOL_REQUEST_LOG: LOG_OFF });
    servers.push(logOff.proc);

    const pool = {
      step: 10_000,
      maxPoolSize: 2_000_000,
      minSizePercent: 50,
      maxSizePerSecond: 0,
      maxSizePerTimes: BATCH,
    };
    const stamp = Date.now();
    // Single ids and batches on entities of their own: a batch load deepens its pool (demand), and refilling it must not weigh on the single-id rounds.
    const key = `seg_${stamp}`;
    const secret = await registerEntity(svc.port, { key, ...pool });
    const batchKey = `batch_${stamp}`;
    const batchSecret = await registerEntity(batchSvc.port, { key: batchKey, ...pool });
    const sfKey = `sf_${stamp}`;
    const sfSecret = await registerEntity(sfSvc.port, {
      key: sfKey,
      mode: 'snowflake',
      maxSizePerSecond: 0,
      maxSizePerTimes: BATCH,
    });
    const sfWideKey = `sfw_${stamp}`;
    const sfWideSecret = await registerEntity(sfWide.port, {
      key: sfWideKey,
      mode: 'snowflake',
      maxSizePerSecond: 0,
      maxSizePerTimes: BATCH,
    });
    const allKey = `all_${stamp}`;
    const allSecret = await registerEntity(logAll.port, { key: allKey, ...pool });
    const offKey = `off_${stamp}`;
    const offSecret = await registerEntity(logOff.port, { key: offKey, ...pool });
    await waitPool(svc.port, key, pool.step);
    await waitPool(batchSvc.port, batchKey, pool.step);
    await waitPool(logAll.port, allKey, pool.step);
    await waitPool(logOff.port, offKey, pool.step);

    const at = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
    const targets: [string, (seconds: number) => Promise<Figures>][] = [
      ['node single', (s) => http(at(node.port, '/ids'), BARE_TOKEN, 1, node.proc.pid!, s)],
      ['express single', (s) => http(at(express.port, '/ids'), BARE_TOKEN, 1, express.proc.pid!, s)],
      ['idpool single', (s) => http(at(svc.port, `/apps/${key}/ids`), secret, 1, svc.proc.pid!, s)],
      ['snowflake single', (s) => http(at(sfSvc.port, `/apps/${sfKey}/ids`), sfSecret, 1, sfSvc.proc.pid!, s)],
      ['log all single', (s) => http(at(logAll.port, `/apps/${allKey}/ids`), allSecret, 1, logAll.proc.pid!, s)],
      ['log off single', (s) => http(at(logOff.port, `/apps/${offKey}/ids`), offSecret, 1, logOff.proc.pid!, s)],
      ['node batch', (s) => http(at(node.port, '/ids'), BARE_TOKEN, BATCH, node.proc.pid!, s)],
      ['express batch', (s) => http(at(express.port, '/ids'), BARE_TOKEN, BATCH, express.proc.pid!, s)],
      [
        'idpool batch',
        (s) => http(at(batchSvc.port, `/apps/${batchKey}/ids`), batchSecret, BATCH, batchSvc.proc.pid!, s),
      ],
      ['snowflake batch', (s) => http(at(sfSvc.port, `/apps/${sfKey}/ids`), sfSecret, BATCH, sfSvc.proc.pid!, s)],
      [
        'snowflake wide batch',
        (s) => http(at(sfWide.port, `/apps/${sfWideKey}/ids`), sfWideSecret, BATCH, sfWide.proc.pid!, s),
      ],
      ['redis cycle', (s) => redisCycle(redis, s)],
    ];
    // BENCH_ONLY=name,name runs only those targets (for a quick A/B; the rows of the others are left out).
    const only = process.env.BENCH_ONLY?.split(',').map((x) => x.trim());
    if (only) targets.splice(0, targets.length, ...targets.filter(([name]) => only.includes(name)));
    // Warm-up: JIT, pools deepened by demand, connections open.
    for (const [, run] of targets) await run(2);
    const results = new Map<string, Figures[]>(targets.map(([name]) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < targets.length; i++) {
        const [name, run] = targets[(i + round * 3) % targets.length];
        const redis0 = cpuSeconds(redisServer.proc.pid!);
        const figures = await run(SECONDS);
        figures.redisUs = ((cpuSeconds(redisServer.proc.pid!) - redis0) * 1e6) / Math.max(1, figures.rps * SECONDS);
        results.get(name)!.push(figures);
      }
      process.stdout.write(`round ${round + 1}/${ROUNDS} done (load ${loadavg()[0].toFixed(2)})\n`);
    }

    const m = (name: string): Figures => {
      const rs = results.get(name) ?? [];
      if (!rs.length) return { rps: Number.NaN, p99: Number.NaN, non2xx: 0, cpuUs: Number.NaN, redisUs: Number.NaN };
      return {
        rps: median(rs.map((r) => r.rps)),
        p99: median(rs.map((r) => r.p99)),
        non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
        cpuUs: median(rs.map((r) => r.cpuUs)),
        redisUs: median(rs.map((r) => r.redisUs)),
      };
    };
    const rows: string[][] = [];
    const row = (label: string, name: string, per: number, ratio: string) => {
      if (!results.get(name)?.length) return;
      const x = m(name);
      rows.push([
        label,
        `${fmt(x.rps)} req/s`,
        `${fmt(x.rps * per)} ids/s`,
        `p99 ${x.p99} ms`,
        Number.isNaN(x.cpuUs) ? '' : `${x.cpuUs.toFixed(0)} µs CPU/req`,
        // Bare servers send Redis nothing; the refills of idle instances cost a fraction of a µs per request.
        x.redisUs >= 1 ? `Redis ${x.redisUs.toFixed(0)} µs/req` : '',
        `${ratio}${x.non2xx ? `  (${x.non2xx} non-2xx/errors)` : ''}`,
      ]);
    };
    const ratio = (a: string, b: string, per = 1, perB = per) => (m(a).rps * per) / (m(b).rps * perB);
    const r = (x: number) => `${x.toFixed(2)}x`;
    row('bare node:http, single id', 'node single', 1, '');
    row('bare express 5, single id', 'express single', 1, '1.00x express');
    row(
      'idpool single id (MariaDB+Redis)',
      'idpool single',
      1,
      `${r(ratio('idpool single', 'express single'))} express (target >= 0.9, p99 <= 10 ms)`,
    );
    row(
      'idpool snowflake single id',
      'snowflake single',
      1,
      `${r(ratio('snowflake single', 'express single'))} express (target >= 0.9)`,
    );
    row('bare node:http, batch 1000', 'node batch', BATCH, '');
    row('bare express 5, batch 1000', 'express batch', BATCH, '1.00x express');
    row('raw Redis cycle (RPUSH+LPOP 1000)', 'redis cycle', BATCH, '1.00x cycle');
    row(
      'idpool batch 1000 (MariaDB+Redis)',
      'idpool batch',
      BATCH,
      `${r(ratio('idpool batch', 'redis cycle'))} raw cycle (target >= 0.8); ${r(ratio('idpool batch', 'express batch'))} express`,
    );
    row(
      'idpool snowflake batch 1000',
      'snowflake batch',
      BATCH,
      `${r(ratio('snowflake batch', 'express batch'))} express (target >= 0.5); ${r((m('snowflake batch').rps * BATCH) / 2_048_000)} of the layout's cap (2,048 ids/ms)`,
    );
    row(
      'idpool snowflake batch 1000, 16 sequence bits',
      'snowflake wide batch',
      BATCH,
      `${r(ratio('snowflake wide batch', 'express batch'))} express (target >= 0.5; cap 65,536 ids/ms)`,
    );
    row('idpool single, IDPOOL_REQUEST_LOG=off', 'log off single', 1, '1.00x off');
    row(
      `idpool single, IDPOOL_REQUEST_LOG=${LOG_ALL}`,
      'log all single',
      1,
      `${r(ratio('log all single', 'log off single'))} off; CPU ${(m('log all single').cpuUs - m('log off single').cpuUs).toFixed(1)} µs/req over off`,
    );
    row(
      'idpool single, default log (errors)',
      'idpool single',
      1,
      `${r(ratio('idpool single', 'log off single'))} off; CPU ${(m('idpool single').cpuUs - m('log off single').cpuUs).toFixed(1)} µs/req over off`,
    );

    const widths = rows[0].map((_, c) => Math.max(...rows.map((x) => x[c].length)));
    process.stdout.write(
      `\nHTTP hot path, ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, medians; node ${process.version}, ${new Date().toISOString()}; load average ${load0.map((l) => l.toFixed(2)).join(' ')} at start, ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} at end\n`,
    );
    for (const x of rows)
      process.stdout.write(
        `${x.map((cell, c) => (c === 0 || c === x.length - 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ')}\n`,
      );
  } finally {
    for (const p of servers) p.kill('SIGTERM');
    redis.disconnect();
    await dropSchema(schema).catch(() => undefined);
    rmSync(redisServer.dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
