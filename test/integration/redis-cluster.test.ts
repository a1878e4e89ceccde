import { hostname } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { type RedisClusterTopology, entitySlot, startRedisCluster } from '../support/redis-cluster';
import { until } from '../support/sentinel';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { sleep, waitFor } from '../support/wait';

/** One sequential client of one entity, alternating between the instances. */
interface Client {
  readonly key: string;
  readonly ids: bigint[];
  /** Answers other than 200 and the 503/429 a fault may cause. */
  readonly unexpected: string[];
  /** Set when an id was not above the previous one. */
  outOfOrder?: string;
  lastOkAt: number;
}

function drive(instances: Instance[], client: Client, secret: string, stop: { now: boolean }): Promise<void> {
  return (async () => {
    for (let n = 0; !stop.now; n++) {
      const res = await takeIds(instances[n % instances.length].url, client.key, secret, 1 + (n % 20)).catch(
        (err) => ({ status: 0, body: { error: String(err) } }) as never,
      );
      if (res.status === 200) {
        for (const text of res.body.ids) {
          const id = BigInt(text);
          const last = client.ids.at(-1);
          if (last !== undefined && id <= last && !client.outOfOrder) client.outOfOrder = `${id} after ${last}`;
          client.ids.push(id);
        }
        client.lastOkAt = Date.now();
      } else {
        if (res.status !== 503 && res.status !== 429)
          client.unexpected.push(`${res.status} ${JSON.stringify(res.body)}`);
        await sleep(20);
      }
    }
  })();
}

/**
 * Redis Cluster (docs/design.md "Redis topologies", invariant 4 per node): three
 * masters with a replica each on spare ports, two idpool instances, twelve
 * busy entities with a sequential client each. A live reshard of busy
 * entities' slots, a CLUSTER FAILOVER and a kill -9 of a master: no id twice,
 * monotonic per client, ids again after each fault.
 */
describeWithServices('Redis Cluster: two idpool instances over 3 masters + 3 replicas', { mysql: true }, () => {
  let cluster: RedisClusterTopology | undefined;
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  const instances: Instance[] = [];

  beforeAll(async () => {
    [cluster, schema] = await Promise.all([startRedisCluster(), createTestSchema()]);
    const env = { IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_CLUSTER_NODES: cluster.seedsEnv };
    instances.push(await startInstance(env), await startInstance(env));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await cluster?.stop();
    await schema?.drop();
  });

  it('live reshard, CLUSTER FAILOVER and kill -9 of a master: no id twice, monotonic per entity, serving again after each', async () => {
    const topo = cluster!;
    const keys = Array.from({ length: 12 }, (_, i) => uniqueKey(`c${i}`));
    const secrets = await Promise.all(
      keys.map((key) => register(instances[0].url, { key, step: 100, maxSizePerTimes: 50, maxSizePerSecond: 0 })),
    );
    const clients: Client[] = keys.map((key) => ({ key, ids: [], unexpected: [], lastOkAt: 0 }));
    const stop = { now: false };
    const running = clients.map((c, i) => drive(instances, c, secrets[i], stop));

    /** Waits until every client has had ids after `since`, and returns how long that took. */
    const recovered = async (what: string, since: number): Promise<number> => {
      await until(
        `every entity served again after ${what}`,
        async () => clients.every((c) => c.lastOkAt > since),
        30_000,
      );
      const ms = Math.max(...clients.map((c) => c.lastOkAt)) - since;
      process.stdout.write(`cluster ${what}: every entity served again within ${ms} ms\n`);
      return ms;
    };

    try {
      await recovered('start', Date.now());
      await sleep(1000);

      // 1. A live reshard: the slots of three busy entities move to another master.
      const { masters } = await topo.roles();
      let at = Date.now();
      for (const key of keys.slice(0, 3)) {
        const slot = entitySlot(key);
        const owner = await topo.ownerOf(slot);
        await topo.migrateSlot(
          slot,
          masters.find((m) => m !== owner)!,
        );
        expect(await topo.ownerOf(slot)).not.toBe(owner);
      }
      await recovered('a live reshard of 3 busy entities', at);
      await sleep(1000);

      // 2. A planned failover: a replica of a master serving busy entities takes over.
      const before = await topo.roles();
      const victim = await topo.ownerOf(entitySlot(keys[3]));
      const replica = before.replicasOf.get(victim)![0];
      at = Date.now();
      await topo.client(replica).call('CLUSTER', 'FAILOVER');
      await until(
        'the replica to be promoted',
        async () => (await topo.client(replica).info('replication')).includes('role:master'),
        20_000,
      );
      await topo.waitHealthy();
      await recovered('CLUSTER FAILOVER', at);
      await sleep(1000);

      // 3. An unplanned failover: kill -9 the master of another busy entity.
      const dead = await topo.ownerOf(entitySlot(keys[6]));
      at = Date.now();
      await topo.kill9(dead);
      await until(
        'a replica to replace the killed master',
        async () => (await topo.ownerOf(entitySlot(keys[6]))) !== dead,
        30_000,
      );
      await topo.waitHealthy();
      await recovered('kill -9 of a master', at);
      await sleep(500);
    } finally {
      stop.now = true;
      await Promise.all(running);
    }

    let total = 0;
    for (const c of clients) {
      expect(c.unexpected, c.key).toEqual([]);
      expect(c.outOfOrder, c.key).toBeUndefined();
      expect(new Set(c.ids).size, `${c.key}: ids handed out twice`).toBe(c.ids.length);
      total += c.ids.length;
    }
    process.stdout.write(`cluster: ${total} ids over ${clients.length} entities, none twice\n`);
    for (const i of instances) expect(i.proc.exitCode).toBeNull();
  }, 240_000);

  it("is one fleet on a Cluster: each instance lists both on one epoch, and has the other's alarms of the faults", async () => {
    const idOf = (i: Instance) => `${hostname()}:${i.proc.pid}`;
    const ids = instances.map(idOf).sort();
    for (const i of instances) {
      const list = await waitFor(
        async () => {
          const r = await call(`${i.url}/admin/instances`, { token: ADMIN_TOKEN });
          // The epoch of a Cluster is every master's, sorted: three of them once the failover has settled (a
          // heartbeat read while the killed master's replica was not yet promoted names two). A heartbeat whose
          // epoch read did not answer within the fleet's read timeout (a loaded machine, a master not yet
          // reachable) says null, "not read" (src/fleet/instances.ts): not settled either, the next beat reads it.
          const settled = r.body.instances.every(
            (x: { epoch: string | null }) => x.epoch !== null && x.epoch.split(',').length === 3,
          );
          return r.body.alive === 2 && r.body.disagreement.epoch === false && settled && r.body;
        },
        { message: 'both instances listed alive on one epoch', timeoutMs: 20_000 },
      );
      expect(list.source).toBe('redis');
      expect(list.instances.map((r: { id: string }) => r.id).sort()).toEqual(ids);
      expect(list.instances[0].epoch.split(',')).toHaveLength(3);
      // The failover and the kill -9 changed the epoch under both: each one's alarms are in the stream. An alarm
      // raised while the Cluster did not take writes is re-sent after the next heartbeat that reaches it (TTL / 5).
      const raisedBy = await waitFor(
        async () => {
          const ops = await call(`${i.url}/admin/ops`, { token: ADMIN_TOKEN });
          expect(ops.body.alarms.scope).toBe('fleet');
          const by = new Set(ops.body.alarms.recent.map((a: { instance: string }) => a.instance));
          return ids.every((id) => by.has(id)) && by;
        },
        { message: "both instances' alarms in the fleet stream", timeoutMs: 10_000 },
      );
      for (const id of ids) expect(raisedBy, id).toContain(id);
    }
  });
});
