import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REDIS_URL } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const ROOT = join(__dirname, '..', '..');

/**
 * Redlock, the refill lock's library before its own functions, defined its Lua commands on the
 * connection at the first lock attempt. With auto-pipelining, a command
 * issued earlier in the same tick had already opened a pipeline that lacked
 * them; queuing `acquireLock` into it threw, ioredis's callbacks fell out of
 * step, and the process died of an uncaught "results[i] is not iterable"
 * (redis/ioredis#1931). Found by the client failover test: an instance died
 * on its own under load. The lock is an FCALL now; the case stays covered.
 *
 * Runs in a child process because the failure is an uncaught exception.
 */
const SCRIPT = `
const { closeRedis, connectRedis } = require('./src/redis/connection');
const { RedisRefillLock } = require('./src/pool/refill-lock');
const { systemClock } = require('./src/clock');
process.on('uncaughtException', (err) => { console.log('UNCAUGHT ' + err.message); process.exit(3); });
(async () => {
  const redis = await connectRedis({ kind: 'single', url: process.env.URL });
  const lock = new RedisRefillLock(redis, systemClock, 1000, 'idpool-t-autopipeline-' + process.pid);
  const size = redis.llen('idpool-t-autopipeline:' + process.pid);
  const held = await lock.acquire('e');
  await size;
  await held?.release();
  console.log(held ? 'LOCKED' : 'NOT LOCKED');
  await closeRedis(redis);
})().catch((err) => { console.log('REJECTED ' + err.message); process.exit(4); });
`;

describeWithServices('Redis connection of the service', { redis: true }, () => {
  it('survives the first refill lock taken in the same tick as another command', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', '-e', SCRIPT], {
      cwd: ROOT,
      env: { ...process.env, URL: REDIS_URL },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stdout.trim(), run.stderr).toBe('LOCKED');
    expect(run.status).toBe(0);
  });
});
