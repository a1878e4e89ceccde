/**
 * Registration rate (issue 10): entities/s through `POST /admin/apps` with 1
 * and 8 concurrent clients, on MariaDB + a private redis-server, one service
 * process. Two shapes side by side:
 *  - "small pools" (step 100, maxPoolSize 1,000): the registration path
 *    itself (validation, secret, one INSERT, the first refill of one pool);
 *  - "defaults": every pool filled to maxPoolSize = 60 × maxSizePerSecond =
 *    300,000 ids right after registration, the cost the pool work (issue 10
 *    part 1) removes.
 * Beside them, the floor under the path: raw single-row INSERTs into the same
 * table from this process with 1 and 8 connections.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPool } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';

const ROOT = join(__dirname, '..');
const MYSQL = process.env.IDPOOL_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/idpool_test';
const ADMIN = 'bench-admin-token-0123456789';
/** Entities per measurement: enough for several seconds at the 500/s target. */
const COUNT = Number(process.env.BENCH_REGISTER_COUNT || 3000);

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function freshSchema(name: string): Promise<string> {
  const u = new URL(MYSQL);
  u.pathname = '/';
  const c = await createConnection({ uri: u.toString() });
  await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await c.query(`CREATE DATABASE \`${name}\``);
  await c.end();
  u.pathname = `/${name}`;
  return u.toString();
}

async function dropSchema(name: string): Promise<void> {
  const u = new URL(MYSQL);
  u.pathname = '/';
  const c = await createConnection({ uri: u.toString() });
  await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await c.end();
}

async function startRedis(): Promise<{ url: string; proc: ChildProcess; dir: string }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'idpool-bench-redis-'));
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = require('node:net').connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `redis://127.0.0.1:${port}/0`, proc, dir };
}

async function startService(env: Record<string, string>): Promise<{ base: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, IDPOOL_PORT: '0', IDPOOL_ADMIN_TOKEN: ADMIN, IDPOOL_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d;
      const m = /"port":(\d+)/.exec(out);
      if (!m) return;
      proc.stdout!.off('data', onData);
      proc.stdout!.resume();
      resolve(Number(m[1]));
    };
    proc.stdout!.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`service exited ${code}: ${out}`)));
  });
  return { base: `http://127.0.0.1:${port}`, proc };
}

/** Registers `count` entities with `clients` concurrent request loops; entities/s. */
async function registerMany(base: string, prefix: string, count: number, clients: number, body: Record<string, unknown>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) {
        const key = `${prefix}-${next++}`;
        const res = await fetch(`${base}/admin/apps`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ key, ...body }),
        });
        if (res.status !== 201) throw new Error(`register ${key}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

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
  const shapes: Array<{ name: string; body: Record<string, unknown>; count: number }> = [
    { name: 'small pools (step 100, maxPoolSize 1,000)', body: { step: 100, maxPoolSize: 1000, maxSizePerTimes: 100 }, count: COUNT },
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
      rows.push(`${`${shape.name}, ${fmt(shape.count)}`.padEnd(50)} 1 client ${fmt(one).padStart(6)} entities/s   8 clients ${fmt(eight).padStart(6)} entities/s`);
    } finally {
      service.proc.kill('SIGTERM');
      await new Promise((r) => service.proc.once('exit', r));
      redis.proc.kill('SIGKILL');
      rmSync(redis.dir, { recursive: true, force: true });
    }
    if (shape === shapes[0]) {
      const one = await rawInserts(url, 1000, 1);
      const eight = await rawInserts(url, COUNT, 8);
      rows.push(`${'raw INSERT (mysql2, same row)'.padEnd(50)} 1 conn   ${fmt(one).padStart(6)} rows/s       8 conns   ${fmt(eight).padStart(6)} rows/s`);
      process.stdout.write(`${rows.at(-1)}\n`);
    }
    await dropSchema(schemaName);
  }
  process.stdout.write(`registration through POST /admin/apps (1 client registers at most 1,000):\n${rows.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
