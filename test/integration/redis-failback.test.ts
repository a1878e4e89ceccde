import Redis from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { registerNew, SMALL_POOL, takeIds } from '../support/http';
import { type Instance, type RedisServer, startInstance, startRedisServer } from '../support/processes';
import { createTestSchema } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { entityKeys } from '../../src/redis/keys';

const REPLICATION_ARGS = ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'];

/** Takes `want` ids one request at a time (25 per request), ignoring 503s while a pool is rebuilt. */
async function takeMany(instance: Instance, key: string, secret: string, want: number, into: string[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  let got = 0;
  while (got < want) {
    if (Date.now() > deadline) throw new Error(`took only ${got} of ${want} ids in 30 s`);
    const res = await takeIds(instance.url, key, secret, 25);
    if (res.status === 200) {
      into.push(...res.body.ids);
      got += res.body.ids.length;
    } else if (res.status === 503) await new Promise((r) => setTimeout(r, 20));
    else throw new Error(`unexpected ${res.status} ${JSON.stringify(res.body)}`);
  }
}

/** Makes `replica` a replica of `master` and waits until it holds everything `master` wrote. */
async function replicate(replica: Redis, master: Redis, masterPort: number): Promise<void> {
  await replica.call('REPLICAOF', '127.0.0.1', String(masterPort));
  const deadline = Date.now() + 15_000;
  while (!(await replica.info('replication')).includes('master_link_status:up')) {
    if (Date.now() > deadline) throw new Error('replica did not sync in 15 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(Number(await master.call('WAIT', '1', '5000'))).toBe(1);
}

describeWithServices(
  'Redis failback (docs/design.md invariant 4: the epoch is run_id:master_replid)',
  { mysql: true },
  () => {
    let x: RedisServer | undefined;
    let y: RedisServer | undefined;
    let instance: Instance | undefined;
    let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
    const clients: Redis[] = [];

    afterEach(async () => {
      for (const c of clients.splice(0)) c.disconnect();
      if (instance?.proc.exitCode === null) instance.proc.kill('SIGCONT');
      await instance?.stop();
      await x?.stop();
      await y?.stop();
      await schema?.drop();
    });

    it('X serves, Y splits off and is promoted, X resyncs from Y and is promoted again: no id is handed out twice', async (ctx) => {
      schema = await createTestSchema();
      [x, y] = await Promise.all([
        startRedisServer('none', REPLICATION_ARGS),
        startRedisServer('none', REPLICATION_ARGS),
      ]);
      const rx = new Redis(x.url);
      const ry = new Redis(y.url);
      clients.push(rx, ry);
      // Y replicates X from the start: a master's first replica gives it a new
      // master_replid (Redis creates its backlog then), which would reset the
      // pools early and hide the failback this test is about.
      await replicate(ry, rx, x.port);
      instance = await startInstance({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: x.url });
      const { key, secret } = await registerNew(instance.url, 'orders', SMALL_POOL);
      const issued: string[] = [];
      await takeMany(instance, key, secret, 2000, issued);
      // Pools are sized by demand: after 2,000 ids the refill tops this one up
      // well above its floor; wait for it so Y's copy holds ids.
      for (let i = 0; i < 100 && (await rx.llen(entityKeys(key).ids)) < 500; i++)
        await new Promise((r) => setTimeout(r, 50));

      // Y splits off with everything X wrote so far: X's pools as they are now.
      expect(Number(await rx.call('WAIT', '1', '5000'))).toBe(1);
      await ry.call('REPLICAOF', 'NO', 'ONE');
      const copyAtSplit = new Set(await ry.lrange(entityKeys(key).ids, 0, -1));
      expect(copyAtSplit.size).toBeGreaterThan(0);

      // idpool keeps talking to X and hands out (among others) the ids of Y's copy.
      await takeMany(instance, key, secret, 3000, issued);

      // Failback: X resyncs from Y (X now holds Y's older copy) and is promoted.
      // idpool is frozen meanwhile so we can look at what X holds before it does.
      instance.proc.kill('SIGSTOP');
      await replicate(rx, ry, y.port);
      await rx.call('REPLICAOF', 'NO', 'ONE');
      const issuedSet = new Set(issued);
      const stale = (await rx.lrange(entityKeys(key).ids, 0, -1)).filter((id) => issuedSet.has(id));
      expect(stale.length).toBeGreaterThan(0); // the danger is real: X's pool holds issued ids
      // A trusted consumer's guarded pop refuses the stale pool.
      await expect(rx.call('FCALL', 'idpool_pop', 2, entityKeys(key).ids, entityKeys(key).epoch, 1)).rejects.toThrow(
        /IDPOOL_SERVER_CHANGED/,
      );
      instance.proc.kill('SIGCONT');

      const before = issued.length;
      await takeMany(instance, key, secret, 5000, issued);
      const after = issued.slice(before);
      const repeats = after.filter((id) => issuedSet.has(id)).length;
      expect(repeats).toBe(0);
      expect(new Set(issued).size).toBe(issued.length);
      // Monotonic entity: what one sequential client takes keeps increasing across the failback.
      for (let i = 1; i < issued.length; i++) expect(BigInt(issued[i]) > BigInt(issued[i - 1])).toBe(true);
      expect(instance.output()).toMatch(/redis_server_changed|pool_discarded/);
      await ctx.annotate?.(`${stale.length} already-issued ids were in X's pool after failback; none was served again`);
    }, 90_000);
  },
);
