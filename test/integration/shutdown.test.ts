import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { register, takeIds } from '../support/http';
import { startInstance } from '../support/processes';
import { describeWithServices } from '../support/describe-with-services';
import { sleep } from '../support/wait';

describeWithServices(
  'graceful shutdown on SIGTERM under load (MariaDB + Redis, real process)',
  { mysql: true, redis: true },
  () => {
    let setup: StoreSetup;

    beforeAll(async () => {
      setup = await mysqlRedisSetup();
    });

    afterAll(async () => {
      await setup?.cleanup();
    });

    it('exits 0, answers every accepted request with 200, and the next instance repeats no id', async () => {
      const first = await startInstance(setup.env);
      const key = uniqueKey('drain');
      // A pool of about half a second of the load below, so refills run during the load and during shutdown,
      // and a refill held up a few hundred milliseconds on a busy machine does not run it dry (a 503 that
      // says the pool is too small for its demand, not anything about draining).
      const secret = await register(first.url, {
        key,
        step: 100,
        maxPoolSize: 12_000,
        maxSizePerSecond: 0,
        minSizePercent: 50,
      });
      while ((await takeIds(first.url, key, secret, 1)).status !== 200) await sleep(20);
      // Business-number entities: the refiller fills them as the layer names them due, and must not go on
      // once the connections close (test/unit/number-periods-refill.test.ts holds a fill at the moment).
      const numbers = await Promise.all(
        Array.from({ length: 4 }, async (_, i) => {
          const numberKey = uniqueKey(`drain-n${i}`);
          const numberSecret = await register(first.url, { key: numberKey, format: 'D{yyyy}{MM}{dd}-{seq:6}' });
          return { key: numberKey, secret: numberSecret };
        }),
      );
      for (const n of numbers) while ((await takeIds(first.url, n.key, n.secret, 1)).status !== 200) await sleep(20);

      const ids: string[] = [];
      const statuses = new Map<number, number>();
      const others: string[] = [];
      let refused = 0;
      let stopLoad = false;
      const start = Date.now();
      // 16 keep-alive clients, each sending its next request 5 ms after the last one answers.
      const worker = async () => {
        while (!stopLoad) {
          try {
            const res = await takeIds(first.url, key, secret, 5);
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (res.status === 200) ids.push(...res.body.ids);
            else others.push(`${Date.now() - start} ms: ${res.status} ${JSON.stringify(res.body)}`);
            await sleep(5);
          } catch {
            // Connection refused or closed before a request was accepted: not an answer.
            refused++;
            await sleep(5);
          }
        }
      };
      const load = Array.from({ length: 16 }, worker);
      await sleep(1500);
      const answeredBefore = ids.length;
      // Refused takes just before the signal: the first is logged, the rest held back and counted (the request
      // log folds repeats of one route and status); that count is written before "stopped", not after it.
      for (let i = 0; i < 5; i++) expect((await takeIds(first.url, key, 'not-the-secret', 1)).status).toBe(401);
      const sigterm = Date.now();
      others.push(`${sigterm - start} ms: SIGTERM`);
      const code = await first.stop();
      const stopMs = Date.now() - sigterm;
      await sleep(300);
      stopLoad = true;
      await Promise.all(load);

      expect(code).toBe(0);
      // Well inside main.ts's 10 s bound: in-flight requests take milliseconds.
      expect(stopMs).toBeLessThan(5000);
      expect(answeredBefore).toBeGreaterThan(1000);
      // Every request that got an answer got ids: no 5xx (or anything else) while draining.
      expect([...statuses.keys()], others.join('\n')).toEqual([200]);
      expect(refused).toBeGreaterThan(0);
      const out = first.output();
      expect(out).toContain('"msg":"stopping"');
      expect(out).toContain('"msg":"stopped"');
      expect(out).not.toMatch(/"level":50/);
      // "stopped" is the last line: nothing ran on after the connections closed (a refill would log its failure).
      const lines = out.split('\n').filter((l) => l.startsWith('{'));
      expect(JSON.parse(lines.at(-1)!), lines.slice(-3).join('\n')).toMatchObject({ msg: 'stopped' });
      // A line with "repeated": N stands for the N held back.
      const refusals = lines
        .map((l) => JSON.parse(l) as { msg?: string; status?: number; repeated?: number })
        .filter((l) => l.msg === 'request' && l.status === 401);
      expect(
        refusals.reduce((n, l) => n + (l.repeated ?? 1), 0),
        JSON.stringify(refusals),
      ).toBe(5);

      // The next instance on the same database and Redis: strictly above every id before.
      const second = await startInstance(setup.env);
      try {
        const after: string[] = [];
        for (let i = 0; i < 50; i++) {
          const res = await takeIds(second.url, key, secret, 50);
          expect(res.status).toBe(200);
          after.push(...res.body.ids);
        }
        const all = [...ids, ...after];
        expect(new Set(all).size).toBe(all.length);
        const maxBefore = ids.reduce((m, id) => (BigInt(id) > m ? BigInt(id) : m), 0n);
        expect(BigInt(after[0]) > maxBefore).toBe(true);
        for (let i = 1; i < after.length; i++) expect(BigInt(after[i]) > BigInt(after[i - 1])).toBe(true);
      } finally {
        expect(await second.stop()).toBe(0);
      }
    });

    it('exits on SIGTERM when the reader of its log is gone (stdout a broken pipe)', async () => {
      const instance = await startInstance(setup.env);
      // The log's reader goes away, as a log shipper that died would: every write to stdout now fails with EPIPE.
      instance.proc.stdout!.destroy();
      const key = uniqueKey('epipe');
      const secret = await register(instance.url, { key, step: 100, maxPoolSize: 1000, maxSizePerSecond: 0 });
      // Lines to write: an error answer is logged, and so is what the shutdown says.
      expect((await takeIds(instance.url, key, 'wrong-secret', 1)).status).toBe(401);
      while ((await takeIds(instance.url, key, secret, 1)).status !== 200) await sleep(20);
      const sigterm = Date.now();
      const exited = await Promise.race([instance.stop(), sleep(15_000).then(() => 'still running')]);
      if (exited === 'still running') await instance.kill9();
      expect(exited).toBe(0);
      // The flush before exit waits at most 1 s for a write: well inside the shutdown's 10 s bound.
      expect(Date.now() - sigterm).toBeLessThan(5000);
    });

    it('answers a request already on its way when stop() begins: 503 not ready, reason "shutting down", Connection: close', async () => {
      const { createService } = await import('../../src/service');
      const { loadConfig } = await import('../../src/config/config');
      const config = loadConfig({
        ...setup.env,
        IDPOOL_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef',
        IDPOOL_WORKER_ID: '7',
        IDPOOL_WORKER_ID_UNSAFE: '1',
      });
      const service = await createService(config, {
        ops: { requestLog: 'off' },
        redisPrefix: `idpool-t-${uniqueKey('p')}`,
      });
      const port = await service.listen(0);
      const base = `http://127.0.0.1:${port}`;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      // A request in flight when stop() begins: its headers are not complete yet.
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      socket.write('GET /readyz HTTP/1.1\r\nHost: x\r\n');
      await sleep(50);
      let raw = '';
      socket.on('data', (d) => (raw += String(d)));
      const ended = new Promise((r) => socket.once('end', r));
      const stopping = service.stop();
      await sleep(50);
      socket.write('Connection: keep-alive\r\n\r\n');
      await ended;
      await stopping;
      // Answered (not dropped), 503 with the reason, and the connection closed after it.
      expect(raw).toMatch(/^HTTP\/1\.1 503 /);
      expect(raw).toMatch(/\r\nconnection: close\r\n/i);
      expect(raw).toMatch(/\r\nretry-after: 1\r\n/i);
      expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({
        status: 'not_ready',
        reason: 'shutting down',
      });
      await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    });
  },
);
