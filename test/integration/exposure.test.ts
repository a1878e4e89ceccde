import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failedCheck, publicCheck } from '../../src/http/readiness';
import { call } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';

const REDIS_PASSWORD = 'redis-pw-do-not-log-4f2a9c';
const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

describe('what strangers and logs can see', () => {
  let redis: RedisServer;
  let instance: Instance;
  let dir: string;

  beforeAll(async () => {
    redis = await startRedisServer('none');
    const admin = new Redis(redis.url);
    await admin.config('SET', 'requirepass', REDIS_PASSWORD);
    admin.disconnect();
    dir = mkdtempSync(join(tmpdir(), 'idpool-exposure-'));
    instance = await startInstance({
      IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}`,
      IDPOOL_REDIS_URL: `redis://:${REDIS_PASSWORD}@127.0.0.1:${redis.port}/0`,
      IDPOOL_METRICS_TOKEN: METRICS_TOKEN,
    });
  });

  afterAll(async () => {
    await instance?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('never logs the Redis password (the start-up line shows the URL masked)', () => {
    expect(instance.output()).toContain('idpool listening');
    expect(instance.output()).toContain(`redis://:***@127.0.0.1:${redis.port}/0`);
    expect(instance.output()).not.toContain(REDIS_PASSWORD);
  });

  it('/metrics needs the bearer token when IDPOOL_METRICS_TOKEN is set', async () => {
    expect((await call(`${instance.url}/metrics`)).status).toBe(401);
    expect((await call(`${instance.url}/metrics`, { token: 'wrong-token-0123456789abcdef' })).status).toBe(401);
    const res = await fetch(`${instance.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('idpool_ids_served_total');
  });

  it('/readyz says what failed without hosts, ports, users or URLs', async () => {
    expect((await call(`${instance.url}/readyz`)).status).toBe(200);
    await redis.kill9();
    let res = await call(`${instance.url}/readyz`);
    const deadline = Date.now() + 10_000;
    while (res.status !== 503 && Date.now() < deadline) res = await call(`${instance.url}/readyz`);
    expect(res.status).toBe(503);
    const text = JSON.stringify(res.body);
    expect(res.body.checks.redis).toMatch(/^(connection refused|connection lost|timed out|failing)$/);
    for (const leak of ['127.0.0.1', String(redis.port), 'redis://', REDIS_PASSWORD, 'sqlite', dir])
      expect(text).not.toContain(leak);
    await redis.restart();
  });

  it('reports driver errors as kinds of failure, from their codes (MySQL errno, DNS), never their text', () => {
    const denied = Object.assign(new Error("Access denied for user 'idpool'@'10.0.0.7' (using password: YES)"), {
      errno: 1045,
      sqlState: '28000',
    });
    expect(failedCheck(denied)).toBe('authentication failed');
    const dns = Object.assign(new Error('getaddrinfo ENOTFOUND db.internal.example'), { code: 'ENOTFOUND' });
    expect(failedCheck(dns)).toBe('host not found');
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:6379'), { code: 'ECONNREFUSED' });
    expect(failedCheck(refused)).toBe('connection refused');
    expect(failedCheck(new Error('something new at mysql://root:pw@db:3306/idpool'))).toBe('failing');
    expect(publicCheck('lease on db.internal:3306 lapsed at 10.1.2.3 via mysql://u:p@h/x')).not.toMatch(
      /db\.internal|10\.1\.2\.3|mysql:|u:p/,
    );
  });
});
