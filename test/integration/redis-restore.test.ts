import Redis from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { type Service, createService } from '../../src/service';
import { serviceParts } from '../../src/service/internals';
import { ADMIN_TOKEN, call, register } from '../support/http';
import { REDIS_URL, clearPrefix, createTestSchema, testPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';
import { inProcessConfig } from '../support/in-process';

const BILLION = 1_000_000_000n;

describeWithServices(
  'Redis mode: a database restored from a backup a billion ids old (issue 28)',
  { mysql: true, redis: true },
  () => {
    let schema: Awaited<ReturnType<typeof createTestSchema>>;
    const services: Service[] = [];
    const prefix = testPrefix();
    afterAll(async () => {
      await Promise.all(services.map((s) => s.stop()));
      const redis = new Redis(REDIS_URL);
      await clearPrefix(redis, prefix);
      redis.disconnect();
      await schema?.drop();
    });

    it('under load: ids again within one refill interval of the first refusal, one database_behind, no repeats', async () => {
      schema = await createTestSchema();
      const config = inProcessConfig({ IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: REDIS_URL });
      const service = await createService(config, { redisPrefix: prefix });
      services.push(service);
      const url = `http://127.0.0.1:${await service.listen(0)}`;
      const secret = await register(url, {
        key: 'orders',
        step: 10_000,
        maxSizePerTimes: 1000,
        maxSizePerSecond: 0,
        maxPoolSize: 50_000,
      });
      const offset = async () =>
        BigInt(
          (
            await serviceParts(service).db.query<{ c: string }>(
              `SELECT ${serviceParts(service).db.bigText('current_offset')} AS c FROM application WHERE entity_key = 'orders'`,
            )
          )[0].c,
        );
      // The backup, then a billion ids of history after it (set, not drawn: the distance is what matters).
      const backup = await offset();
      await serviceParts(service).db.execute(
        `UPDATE application SET current_offset = current_offset + ? WHERE entity_key = 'orders'`,
        [Number(BILLION)],
      );

      // Load: four clients taking 100 ids at a time, every answer kept with when it came.
      const seen = new Set<string>();
      const answers: { at: number; status: number }[] = [];
      let repeats = 0;
      let running = true;
      const client = async () => {
        while (running) {
          const res = await call(`${url}/apps/orders/ids`, { token: secret, body: { count: 100 } });
          answers.push({ at: Date.now(), status: res.status });
          if (res.status === 200)
            for (const id of res.body.ids as string[]) {
              if (seen.has(id)) repeats++;
              else seen.add(id);
            }
          else await new Promise((r) => setTimeout(r, 5));
        }
      };
      const clients = [client(), client(), client(), client()];
      // Ids drawn above the billion: the fence is there now.
      while ([...seen].filter((id) => BigInt(id) > BILLION).length < 20_000)
        await new Promise((r) => setTimeout(r, 20));
      const highestBefore = [...seen].reduce((a, b) => (BigInt(b) > BigInt(a) ? b : a));

      // The restore: the row goes back a billion ids while the clients keep taking.
      await serviceParts(service).db.execute(`UPDATE application SET current_offset = ? WHERE entity_key = 'orders'`, [
        backup.toString(),
      ]);
      const restoredAt = Date.now();
      const behind = () =>
        serviceParts(service)
          .ops.alarms.recent()
          .filter((a) => a.name === 'database_behind');
      while (behind().length === 0 && Date.now() - restoredAt < 20_000) await new Promise((r) => setTimeout(r, 10));
      expect(behind()).toHaveLength(1);
      const refusedAt = Date.parse(behind()[0].at);
      // Keep the load on for a while past the carry.
      await new Promise((r) => setTimeout(r, 1500));
      running = false;
      await Promise.all(clients);

      const alarm = behind()[0];
      expect(alarm).toMatchObject({ severity: 'critical', entityKey: 'orders' });
      expect(alarm.details).toMatchObject({ databaseOffset: backup.toString(), record: 'fence' });
      expect(BigInt(alarm.details!.fence as string)).toBeGreaterThanOrEqual(BigInt(highestBefore));
      expect(BigInt(alarm.details!.carriedTo as string)).toBeGreaterThan(BigInt(alarm.details!.fence as string));
      expect(alarm.message).toMatch(/carried the offset to \d+ in one reservation/);
      // One alarm for the episode, and no warning per refused segment.
      expect(behind()).toHaveLength(1);
      expect(
        serviceParts(service)
          .ops.alarms.recent()
          .filter((a) => a.name === 'fence_refused'),
      ).toHaveLength(0);
      expect(repeats).toBe(0);
      // Ids again within one refill interval (100 ms) of the first refusal: the first answer after it is a 200 that soon.
      const firstAfter = answers.find((a) => a.at >= refusedAt && a.status === 200);
      expect(firstAfter).toBeDefined();
      expect(firstAfter!.at - refusedAt).toBeLessThanOrEqual(config.refillIntervalMs);
      // And the pool never went dry long enough for a take to give up (it waits 250 ms for a refill):
      // before, the refiller reserved and had refused 10,000-id segment after segment, ~15 minutes for a billion.
      expect(answers.filter((a) => a.at >= restoredAt && a.status !== 200)).toEqual([]);
      // Every id drawn after the restore is above the fence the database fell behind.
      expect(await offset()).toBeGreaterThan(BILLION);
      const shown = await call(`${url}/admin/apps/orders`, { token: ADMIN_TOKEN });
      expect(BigInt(shown.body.currentOffset)).toBeGreaterThan(BILLION);
    }, 120_000);
  },
);
