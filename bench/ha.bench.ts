/**
 * `npm run bench -- ha`: what a Redis fault costs, measured on real
 * processes (spare ports; the shared servers are never touched):
 *
 * - Sentinel failover, planned (`SENTINEL FAILOVER`) and unplanned (`kill -9`
 *   of the master): 1 master, 1 replica, 3 Sentinels, two idpool instances.
 * - Failback: idpool on X; Y splits off and is promoted; X resyncs from Y
 *   and is promoted again (the case the epoch `run_id:master_replid` exists for).
 *
 * For each: the seconds no client got an id, and the ids wasted (taken from
 * the database's number line but never handed out: the pools discarded
 * because their epoch changed). Entities use the defaults with no rate
 * limit (pool ceiling 300,000 ids). Four sequential clients take 10 ids per
 * request. Figures, not assertions.
 */
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { register, takeIds } from '../test/support/http';
import { type Instance, startInstance, startRedisServer } from '../test/support/processes';
import { startSentinelTopology, until } from '../test/support/sentinel';
import { createTestSchema } from '../test/support/services';
import { entityKeys } from '../src/redis/keys';
import { sleep } from '../test/support/wait';

const ENTITY = { step: 1000, maxSizePerSecond: 0, maxSizePerTimes: 10 };

interface Load {
  issued: number;
  okAt: number[];
  stop(): Promise<void>;
}

function load(instances: Instance[], key: string, secret: string): Load {
  const state = { issued: 0, okAt: [] as number[] };
  let running = true;
  const loops = [0, 1, 2, 3].map(async (i) => {
    const instance = instances[i % instances.length];
    while (running) {
      const res = await takeIds(instance.url, key, secret, 10).catch(() => undefined);
      if (res?.status === 200) {
        state.issued += res.body.ids.length;
        state.okAt.push(Date.now());
      } else await sleep(25);
    }
  });
  return Object.assign(state, {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  });
}

function outage(okAt: number[], faultAt: number): number {
  let last = faultAt;
  let longest = 0;
  for (const t of [...okAt].sort((a, b) => a - b)) {
    if (t < faultAt) continue;
    longest = Math.max(longest, t - last);
    last = t;
  }
  return longest;
}

/** Ids taken from the number line but neither handed out nor ready in a pool. */
async function wasted(schemaUrl: string, key: string, issued: number, redisPort: number): Promise<number> {
  const c = await createConnection({ uri: schemaUrl });
  const [rows] = (await c.query(
    'SELECT CAST(current_offset AS CHAR) AS o, CAST(start_offset AS CHAR) AS s FROM application WHERE entity_key = ?',
    [key],
  )) as unknown as [{ o: string; s: string }[]];
  await c.end();
  const r = new Redis(redisPort, '127.0.0.1');
  const ready = await r.llen(entityKeys(key).ids);
  r.disconnect();
  return Number(BigInt(rows[0].o) - BigInt(rows[0].s)) - issued - ready;
}

function report(name: string, outageMs: number, wastedIds: number, issued: number): void {
  process.stdout.write(
    `${name.padEnd(34)} unavailable ${(outageMs / 1000).toFixed(2).padStart(5)} s   ids wasted ${String(wastedIds).padStart(8)}   (ids handed out: ${issued})\n`,
  );
}

async function sentinel(planned: boolean): Promise<void> {
  const schema = await createTestSchema();
  const topology = await startSentinelTopology();
  const instances: Instance[] = [];
  try {
    const env = { IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_SENTINELS: topology.sentinelsEnv };
    instances.push(await startInstance(env), await startInstance(env));
    const key = `ha-${Date.now()}`;
    const secret = await register(instances[0].url, { key, ...ENTITY });
    await until(
      'both instances to serve',
      async () => (await takeIds(instances[1].url, key, secret, 1)).status === 200,
    );
    const traffic = load(instances, key, secret);
    await sleep(3000);
    const [master, replica] = topology.servers;
    const faultAt = Date.now();
    if (planned) await topology.sentinel('FAILOVER', topology.masterName);
    else await master.kill9();
    await until('the promotion', async () => (await topology.masterPort()) === replica.port, 30_000);
    await until('ids again', async () => traffic.okAt.some((t) => t > faultAt + 100), 30_000);
    await sleep(3000);
    await traffic.stop();
    await sleep(500); // refills under way settle
    report(
      `sentinel ${planned ? 'planned (SENTINEL FAILOVER)' : 'unplanned (kill -9)'}`,
      outage(traffic.okAt, faultAt),
      await wasted(schema.url, key, traffic.issued + 1, replica.port),
      traffic.issued,
    );
  } finally {
    for (const i of instances) await i.stop();
    await topology.stop();
    await schema.drop();
  }
}

async function failback(): Promise<void> {
  const schema = await createTestSchema();
  const args = ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'];
  const [x, y] = await Promise.all([startRedisServer('none', args), startRedisServer('none', args)]);
  const rx = new Redis(x.port, '127.0.0.1');
  const ry = new Redis(y.port, '127.0.0.1');
  let instance: Instance | undefined;
  const synced = (r: Redis) =>
    until('sync', async () => (await r.info('replication')).includes('master_link_status:up'));
  try {
    await ry.call('REPLICAOF', '127.0.0.1', String(x.port));
    await synced(ry);
    instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: x.url });
    const key = `ha-${Date.now()}`;
    const secret = await register(instance.url, { key, ...ENTITY });
    const traffic = load([instance], key, secret);
    await sleep(2000);
    await rx.call('WAIT', '1', '5000');
    await ry.call('REPLICAOF', 'NO', 'ONE');
    await sleep(2000);
    // The failback: X is read-only from here until its promotion.
    const faultAt = Date.now();
    await rx.call('REPLICAOF', '127.0.0.1', String(y.port));
    await synced(rx);
    await rx.call('REPLICAOF', 'NO', 'ONE');
    await until('ids again', async () => traffic.okAt.some((t) => t > Date.now() - 50 && t > faultAt), 30_000);
    await sleep(3000);
    await traffic.stop();
    await sleep(500);
    report(
      'failback (X → Y → X)',
      outage(traffic.okAt, faultAt),
      await wasted(schema.url, key, traffic.issued, x.port),
      traffic.issued,
    );
  } finally {
    await instance?.stop();
    rx.disconnect();
    ry.disconnect();
    await x.stop();
    await y.stop();
    await schema.drop();
  }
}

async function main(): Promise<void> {
  process.stdout.write('Redis faults under load (4 sequential clients, 10 ids per request, pool ceiling 300,000):\n');
  await sentinel(true);
  await sentinel(false);
  await failback();
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
