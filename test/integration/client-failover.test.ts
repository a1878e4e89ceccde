import { afterAll, beforeAll, expect, it } from 'vitest';
import { IdpoolClient } from '../../src/client';
import { ADMIN_TOKEN, call, registerNew } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { SQL_SERVERS, type TestSchema, createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(
    `IdpoolClient failover: one of two instances killed (kill -9) mid-run (${name})`,
    { [server]: true, redis: true },
    () => {
      let schema: TestSchema;
      let a: Instance;
      let b: Instance;

      beforeAll(async () => {
        schema = await createTestSchema(server);
        const env = { IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv() };
        a = await startInstance(env);
        b = await startInstance(env);
      });

      afterAll(async () => {
        await a?.kill9();
        await b?.stop();
        await schema?.drop();
      });

      it('keeps handing out ids through the survivor, with no id twice and each batch in order', async () => {
        const { key, secret } = await registerNew(a.url, 'failover', {
          mode: 'monotonic',
          step: 100,
          maxPoolSize: 2000,
        });
        // A may die holding the entity's refill lock (10 s TTL) with a pool this
        // small, so B can answer 503 pool_exhausted for ~10 s: a longer deadline
        // than the default 15 s keeps the test about failover, not about that wait.
        const client = new IdpoolClient({
          endpoints: [a.url, b.url],
          entities: { [key]: { secret } },
          timeoutMs: 2000,
          deadlineMs: 30_000,
        });

        const TARGET = 6000;
        const KILL_AT = 1500;
        const batches: string[][] = [];
        let taken = 0;
        let killed: Promise<void> | undefined;
        let takenAtKill = 0;
        const worker = async () => {
          while (taken < TARGET) {
            const ids = await client.take(key, 10);
            batches.push(ids);
            taken += ids.length;
            if (!killed && taken >= KILL_AT) {
              takenAtKill = taken;
              killed = a.kill9();
            }
          }
        };
        // Six callers at once, so requests are in flight on A when it dies.
        await Promise.all(Array.from({ length: 6 }, worker));
        await killed;

        // A must have died of our kill, not of something else on its own.
        expect(a.proc.signalCode, `A exited with ${a.proc.exitCode}:\n${a.output().slice(-4000)}`).toBe('SIGKILL');
        expect(taken).toBeGreaterThanOrEqual(TARGET);
        expect(taken - takenAtKill).toBeGreaterThan(TARGET / 2);
        const all = batches.flat();
        expect(new Set(all).size).toBe(all.length);
        for (const batch of batches) {
          expect(batch).toHaveLength(10);
          for (let i = 1; i < batch.length; i++) expect(BigInt(batch[i])).toBeGreaterThan(BigInt(batch[i - 1]));
        }

        // The survivor keeps serving, and what it hands out next is above everything seen.
        const highest = all.reduce((m, id) => (BigInt(id) > m ? BigInt(id) : m), 0n);
        const after = await client.take(key, 1);
        expect(BigInt(after[0])).toBeGreaterThan(highest);
        const shown = await call(`${b.url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
        expect(shown.status).toBe(200);
      });
    },
  );
}
