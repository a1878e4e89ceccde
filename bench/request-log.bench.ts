/**
 * Cost of per-request logging and metrics on the single-id route.
 * Throughput (autocannon, keep-alive, 50 connections, 10 s after a 3 s
 * warm-up) of:
 *   1. a bare express route that answers {"ids": ["1"]} with the same body parser;
 *   2. idpool's POST /apps/:key/ids?count=1 with IDPOOL_REQUEST_LOG=0 (histogram only);
 *   3. the same with one pino line per request (the default).
 * Each server is its own process; logs go to /dev/null (a pipe or file costs
 * the same write(2) per batch). The target is (3) ≥ 0.8 × (1).
 * Needs MariaDB and Redis (IDPOOL_TEST_MYSQL_URL / IDPOOL_TEST_REDIS_URL).
 * A benchmark prints figures; it asserts nothing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { createConnection } from 'mysql2/promise';

const ROOT = join(__dirname, '..');
const MYSQL = process.env.IDPOOL_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/idpool_test';
const REDIS = process.env.IDPOOL_TEST_REDIS_URL || 'redis://127.0.0.1:6379/15';
const ADMIN = 'bench-admin-token-0123456789abcdef';
const DURATION_S = Number(process.env.BENCH_DURATION_S || 10);

const BARE = `
const express = require('express');
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json({ limit: '16kb', strict: false }));
app.post('/apps/:key/ids', (req, res) => res.json({ ids: ['1'] }));
const s = app.listen(0, () => console.log(JSON.stringify({ port: s.address().port, msg: 'idpool listening' })));
`;

function start(args: string[], env: Record<string, string>): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)[^\n]*"msg":"idpool listening"/.exec(out);
      if (m) {
        // From here on, stdout is drained and dropped (as if written to /dev/null).
        proc.stdout.off('data', onData);
        proc.stdout.resume();
        resolve({ proc, port: Number(m[1]) });
      }
    };
    proc.stdout.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

function cannon(url: string, headers: Record<string, string>, duration: number): Promise<autocannon.Result> {
  return autocannon({
    url,
    method: 'POST',
    connections: 50,
    duration,
    headers: { 'content-type': 'application/json', ...headers },
    body: '{"count":1}',
  });
}

/** CPU seconds (user + system) a process has used, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 Hz on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Throughput, and the server's CPU time per request: on a shared 2-core
 * machine throughput swings with other load, CPU per request much less.
 */
async function measure(
  name: string,
  url: string,
  pid: number,
  headers: Record<string, string> = {},
): Promise<{ rps: number; cpuUs: number }> {
  await cannon(url, headers, 3);
  const cpu0 = cpuSeconds(pid);
  const r = await cannon(url, headers, DURATION_S);
  const cpuUs = ((cpuSeconds(pid) - cpu0) * 1e6) / r.requests.total;
  const non2xx = r.non2xx + r.errors;
  process.stdout.write(
    `${name.padEnd(44)} ${Math.round(r.requests.average).toString().padStart(7)} req/s   p99 ${String(r.latency.p99).padStart(3)} ms   server CPU ${cpuUs.toFixed(0).padStart(4)} µs/request${non2xx ? `   (${non2xx} non-2xx/errors)` : ''}\n`,
  );
  return { rps: r.requests.average, cpuUs };
}

async function main(): Promise<void> {
  const u = new URL(MYSQL);
  const schema = `idpool_bench_${Date.now()}`;
  const admin = await createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
  });
  await admin.query(`CREATE DATABASE \`${schema}\``);
  u.pathname = `/${schema}`;
  const results: Record<string, { rps: number; cpuUs: number }> = {};
  try {
    const bare = await start(['-e', BARE], {});
    results.bare = await measure('bare express route', `http://127.0.0.1:${bare.port}/apps/x/ids`, bare.proc.pid!);
    await stop(bare.proc);

    for (const log of ['0', '1']) {
      const env = {
        IDPOOL_DATABASE_URL: u.toString(),
        IDPOOL_REDIS_URL: REDIS,
        IDPOOL_PORT: '0',
        IDPOOL_ADMIN_TOKEN: ADMIN,
        IDPOOL_REQUEST_LOG: log,
        IDPOOL_WORKER_ID: '1',
        IDPOOL_WORKER_ID_UNSAFE: '1',
      };
      const svc = await start(['--import', 'tsx', join(ROOT, 'src', 'main.ts')], env);
      const base = `http://127.0.0.1:${svc.port}`;
      const key = `bench_${log}_${Date.now()}`;
      const reg = await fetch(`${base}/admin/apps`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ key, maxSizePerSecond: 0, maxPoolSize: 1_000_000, step: 10_000 }),
      });
      const { secret } = (await reg.json()) as { secret: string };
      // Let the first fill finish before measuring.
      await new Promise((r) => setTimeout(r, 3000));
      results[log] = await measure(
        log === '1' ? 'idpool single id, request log on (default)' : 'idpool single id, request log off',
        `${base}/apps/${key}/ids`,
        svc.proc.pid!,
        { authorization: `Bearer ${secret}` },
      );
      await stop(svc.proc);
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS \`${schema}\``);
    await admin.end();
  }
  const on = results['1'];
  const off = results['0'];
  process.stdout.write(
    `\nthroughput  log on / log off ${(on.rps / off.rps).toFixed(2)}   log on / bare route ${(on.rps / results.bare.rps).toFixed(2)} (target: ≥ 0.80)\n`,
  );
  process.stdout.write(
    `CPU/request log on / log off ${(off.cpuUs / on.cpuUs).toFixed(2)}   bare / log on ${(results.bare.cpuUs / on.cpuUs).toFixed(2)} (throughput ratios a CPU-bound server would reach)\n`,
  );
  process.stdout.write(`request log line costs ${(on.cpuUs - off.cpuUs).toFixed(0)} µs of server CPU per request\n`);
}

void main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
