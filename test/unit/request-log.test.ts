import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Histogram, type MetricValueWithName, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { RequestLogMode } from '../../src/ops/settings';
import { type Logger, RepeatedLines } from '../../src/logger';
import { requestObserver } from '../../src/ops/request-log';

interface Line {
  level: 'info' | 'warn';
  obj: Record<string, unknown>;
  msg?: string;
}

function recorder(lines: Line[]): Logger {
  const log: Logger = {
    debug: () => undefined,
    info: (obj, msg) => void lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
    warn: (obj, msg) => void lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    error: () => undefined,
    child: () => log,
  };
  return log;
}

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/**
 * A real express app behind the observer: /ok answers 200, /slow 200 after 60 ms, /bad 400, /fail 503.
 * The observer's clock moves only by /slow's 60 ms, so a loaded machine's slow /ok is never "slow".
 */
async function serve(
  mode: RequestLogMode,
  slowMs: number,
  wrap: (log: Logger) => Logger = (log) => log,
): Promise<{ lines: Line[]; get(path: string): Promise<number>; observed(): Promise<number> }> {
  const lines: Line[] = [];
  const registry = new Registry();
  const duration = new Histogram({
    name: 'http_seconds',
    help: 'h',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const app = express();
  let monotonic = 0;
  app.use(requestObserver({ log: wrap(recorder(lines)), mode, slowMs, duration, now: () => monotonic }));
  app.get('/ok', (_req, res) => void res.json({ ok: true }));
  app.get('/slow', (_req, res) => {
    monotonic += 60;
    res.json({ ok: true });
  });
  app.get('/bad', (_req, res) => void res.status(400).json({ error: 'invalid_request' }));
  app.get('/fail', (_req, res) => void res.status(503).json({ error: 'unavailable' }));
  server = app.listen(0);
  await new Promise((r) => server!.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    lines,
    async get(path) {
      const res = await fetch(`${base}${path}`);
      await res.arrayBuffer();
      // The line is written on 'close', after the client has the answer.
      await new Promise((r) => setTimeout(r, 20));
      return res.status;
    },
    async observed() {
      const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'http_seconds');
      // A histogram's values carry the series name (…_count, …_sum, …_bucket).
      const values = (metric?.values ?? []) as MetricValueWithName<string>[];
      return values.filter((v) => v.metricName === 'http_seconds_count').reduce((a, v) => a + v.value, 0);
    },
  };
}

describe('request log modes', () => {
  it('errors: logs non-2xx answers and slow requests only, and every request still reaches the histogram', async () => {
    const s = await serve('errors', 40);
    expect(await s.get('/ok')).toBe(200);
    expect(await s.get('/bad')).toBe(400);
    expect(await s.get('/fail')).toBe(503);
    expect(await s.get('/slow')).toBe(200);
    expect(s.lines.map((l) => [l.level, l.obj.path, l.obj.status])).toEqual([
      ['info', '/bad', 400],
      ['warn', '/fail', 503],
      ['info', '/slow', 200],
    ]);
    expect(s.lines[2].obj.ms as number).toBeGreaterThanOrEqual(40);
    expect(s.lines.every((l) => l.msg === 'request')).toBe(true);
    expect(await s.observed()).toBe(4);
  });

  it('errors: repeats of one route and status fold into a line a second with their count, written when the key falls silent', async () => {
    let now = 0;
    const limiter = new RepeatedLines({ monotonic: () => now });
    const s = await serve('errors', 250, (log) => limiter.wrap(log));
    for (let i = 0; i < 30; i++) expect(await s.get('/bad')).toBe(400);
    expect(await s.get('/fail')).toBe(503);
    expect(await s.get('/fail')).toBe(503);
    // Still the first window: one line each for /bad and /fail.
    expect(s.lines.map((l) => [l.obj.path, l.obj.repeated])).toEqual([
      ['/bad', undefined],
      ['/fail', undefined],
    ]);
    // Both keys fall silent; the limiter's once-a-second tick writes what each held back.
    now = 1000;
    limiter.sweep();
    expect(s.lines.slice(2).map((l) => [l.level, l.obj.path, l.obj.status, l.obj.repeated])).toEqual([
      ['info', '/bad', 400, 29],
      ['warn', '/fail', 503, 1],
    ]);
    expect(await s.observed()).toBe(32);
  });

  it('all: one line per request, never folded; off: none', async () => {
    const limiter = new RepeatedLines({ monotonic: () => 0 });
    const all = await serve('all', 250, (log) => limiter.wrap(log));
    for (const path of ['/ok', '/bad', '/ok', '/bad']) await all.get(path);
    limiter.sweep();
    expect(all.lines.map((l) => l.obj.path)).toEqual(['/ok', '/bad', '/ok', '/bad']);
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;

    const off = await serve('off', 0);
    for (const path of ['/ok', '/bad', '/fail', '/slow']) await off.get(path);
    expect(off.lines).toEqual([]);
    expect(await off.observed()).toBe(4);
  });
});
