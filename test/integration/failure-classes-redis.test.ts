import Redis, { type Cluster } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { type RedisClient, closeRedis, connectRedis } from '../../src/redis/connection';
import { classifyRedisError, replyWord } from '../../src/redis/errors';
import { type RedisServer, freePort, startRedisServer } from '../support/processes';
import { expectFailure, rejection } from '../support/failures';
import { sleep, waitFor } from '../support/wait';

/**
 * Every Redis failure idpool answers 503 for, provoked for real on private
 * redis-servers and read by the classifier through the clients connectRedis
 * makes: a reply's first word, ioredis's own failures (marked as they
 * reject a command), a Cluster out of redirections.
 */
describe('Redis failures, provoked and classified', () => {
  const servers: RedisServer[] = [];
  const clients: RedisClient[] = [];
  const server = async (args: string[] = []) => {
    const s = await startRedisServer('none', args);
    servers.push(s);
    return s;
  };
  const client = async (url: string) => {
    const c = await connectRedis({ kind: 'single', url });
    clients.push(c);
    return c;
  };
  const admin = (port: number) => new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });

  afterAll(async () => {
    await Promise.all(clients.map((c) => closeRedis(c).catch(() => undefined)));
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('a refused connection: ECONNREFUSED → unavailable/refused', async () => {
    const port = await freePort();
    expectFailure(await rejection(connectRedis({ kind: 'single', url: `redis://127.0.0.1:${port}` })), {
      class: 'unavailable',
      kind: 'refused',
    });
  });

  it('a server that stops answering (SIGSTOP): the command timeout → unavailable/timeout', async () => {
    const s = await server();
    const redis = await client(s.url);
    process.kill(s.pid, 'SIGSTOP');
    try {
      expectFailure(await rejection(redis.get('x')), { class: 'unavailable', kind: 'timeout' });
    } finally {
      process.kill(s.pid, 'SIGCONT');
    }
  });

  it('a killed server (kill -9): the closed connection, then the refused reconnects → unavailable', async () => {
    const s = await server();
    const redis = await client(s.url);
    await redis.set('x', '1');
    await s.kill9();
    await waitFor(() => redis.status !== 'ready', { message: 'the client to see the server gone' });
    const err = await rejection(redis.get('x'));
    expectFailure(err, { class: 'unavailable' });
    expect(['lost', 'refused']).toContain(classifyRedisError(err as Error)?.kind);
    await s.restart();
  });

  it('a replica: READONLY → unavailable/read_only', async () => {
    const master = await server();
    const replica = await server(['--replicaof', '127.0.0.1', String(master.port)]);
    const redis = await client(replica.url);
    expectFailure(await rejection(redis.set('x', '1')), { class: 'unavailable', kind: 'read_only', reply: 'READONLY' });
  });

  it('a replica with replica-serve-stale-data no whose master is gone: MASTERDOWN → unavailable/no_master', async () => {
    const master = await server();
    const replica = await server(['--replicaof', '127.0.0.1', String(master.port), '--replica-serve-stale-data', 'no']);
    const redis = await client(replica.url);
    await master.kill9();
    const err = await waitFor(
      async () =>
        redis.get('x').then(
          () => undefined,
          (e: unknown) => e,
        ),
      {
        message: 'the replica to refuse reads',
      },
    );
    expectFailure(err, { class: 'unavailable', kind: 'no_master', reply: 'MASTERDOWN' });
  });

  it('a server reloading its data set (DEBUG RELOAD): LOADING → unavailable/loading', async () => {
    const s = await server(['--enable-debug-command', 'yes']);
    const redis = await client(s.url);
    const control = admin(s.port);
    try {
      // Loading made slow (100 µs a key, Redis's own test knob) and events served every KB of it: Redis answers LOADING between the chunks it reads.
      await control.call('DEBUG', 'POPULATE', '20000', 'k', '64');
      await control.config('SET', 'key-load-delay', '100');
      await control.config('SET', 'loading-process-events-interval-bytes', '1024');
      let reloaded = false;
      const reload = control.call('DEBUG', 'RELOAD').finally(() => (reloaded = true));
      // While it saves first, nothing answers (those commands time out); then it loads, answering LOADING.
      let loading: unknown;
      while (!reloaded && loading === undefined) {
        const err = await redis.get('k:1').then(
          () => undefined,
          (e: unknown) => e,
        );
        if (replyWord(err) === 'LOADING') loading = err;
        else await sleep(1);
      }
      await reload;
      expectFailure(loading, { class: 'unavailable', kind: 'loading', reply: 'LOADING' });
    } finally {
      control.disconnect();
    }
  }, 60_000);

  it('EVALSHA of a script the server does not hold: NOSCRIPT → unavailable/missing_script', async () => {
    const s = await server();
    const redis = await client(s.url);
    expectFailure(await rejection(redis.evalsha('0'.repeat(40), 0)), {
      class: 'unavailable',
      kind: 'missing_script',
      reply: 'NOSCRIPT',
    });
  });

  it('a long script running: BUSY → busy/script_busy', async () => {
    const s = await server(['--busy-reply-threshold', '50']);
    const redis = await client(s.url);
    const control = admin(s.port);
    const spinner = admin(s.port);
    try {
      const spin = 'local t = tonumber(redis.call("TIME")[1]) + 3 while tonumber(redis.call("TIME")[1]) < t do end';
      const spinning = spinner.eval(spin, 0).catch(() => undefined);
      await sleep(200);
      expectFailure(await rejection(redis.get('x')), { class: 'busy', kind: 'script_busy', reply: 'BUSY' });
      await control.call('SCRIPT', 'KILL').catch(() => undefined);
      await spinning;
    } finally {
      control.disconnect();
      spinner.disconnect();
    }
  });

  it('a Cluster with a slot no node serves: CLUSTERDOWN, kept through the redirections ioredis gave up on → unavailable/cluster_down', async () => {
    const s = await server([
      '--cluster-enabled',
      'yes',
      '--cluster-announce-ip',
      '127.0.0.1',
      '--cluster-config-file',
      `nodes-${Date.now()}.conf`,
    ]);
    const control = admin(s.port);
    try {
      await control.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      await waitFor(async () => String(await control.call('CLUSTER', 'INFO')).includes('cluster_state:ok'), {
        message: 'the one-node cluster to be up',
      });
      const cluster = await connectRedis({ kind: 'cluster', nodes: [{ host: '127.0.0.1', port: s.port }] });
      clients.push(cluster);
      await cluster.set('x', '1');
      // Slot 16383 served by nobody: the cluster is down (cluster-require-full-coverage yes).
      await control.call('CLUSTER', 'DELSLOTS', '16383');
      await waitFor(async () => String(await control.call('CLUSTER', 'INFO')).includes('cluster_state:fail'), {
        message: 'the node to see the cluster down',
      });
      // The node's own answer, as a Cluster client's node connection gets it:
      const [node] = (cluster as Cluster).nodes('master');
      expectFailure(await rejection(node.get('x')), {
        class: 'unavailable',
        kind: 'cluster_down',
        reply: 'CLUSTERDOWN',
      });
      // Through the Cluster client, which retries CLUSTERDOWN every 100 ms until it gives up (its last reply kept
      // as lastNodeError) or the command's 2 s timeout ends it first on a loaded machine: unavailable either way.
      const err = await rejection(cluster.get('x'));
      const found = expectFailure(err, { class: 'unavailable' });
      expect(found?.reply === 'CLUSTERDOWN' || found?.kind === 'timeout', String(err)).toBe(true);
    } finally {
      control.disconnect();
    }
  }, 30_000);

  it('a reply that is idpool asking wrong is a bug, not 503: WRONGTYPE, ERR', async () => {
    const s = await server();
    const redis = await client(s.url);
    await redis.set('s', 'x');
    expectFailure(await rejection(redis.lpush('s', '1')), { class: 'bug', reply: 'WRONGTYPE' });
    expectFailure(await rejection(redis.call('NOSUCHCOMMAND')), { class: 'bug', reply: 'ERR' });
  });
});
