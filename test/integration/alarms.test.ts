import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StoreSetup, mysqlRedisSetup, uniqueKey } from '../support/configs';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type Instance, type RedisServer, alarmLines, startInstance, startRedisServer } from '../support/processes';
import { createTestSchema } from '../support/services';
import { startReceiver } from '../support/webhook';
import { describeWithServices } from '../support/describe-with-services';
import { sleep, waitFor } from '../support/wait';

describeWithServices(
  'alarms: structured log lines and a de-duplicated webhook (real process)',
  { mysql: true, redis: true },
  () => {
    describe('a forecast crossing its horizon', () => {
      let setup: StoreSetup;
      let instance: Instance;
      let receiver: Awaited<ReturnType<typeof startReceiver>>;

      beforeAll(async () => {
        setup = await mysqlRedisSetup();
        receiver = await startReceiver();
        instance = await startInstance({
          ...setup.env,
          IDPOOL_ALERT_WEBHOOK_URL: receiver.url,
          IDPOOL_OPS_SAMPLE_MS: '200',
          IDPOOL_OPS_RATE_WINDOW_MS: '3000',
        });
      });

      afterAll(async () => {
        await instance?.stop();
        await receiver?.close();
        await setup?.cleanup();
      });

      it('fires exactly one webhook call when ids will pass 2^53 within 30 days, however long it holds', async () => {
        const key = uniqueKey('nearjs');
        // 10 million numbers below 2^53: at ~100 ids a second that is ~1.2 days, inside the 30-day horizon.
        const startOffset = (2n ** 53n - 10_000_000n).toString();
        // One step (the pool's floor) of 20,000 outlasts the test's demand: 60 s × ~100 ids/s stays under
        // it, so the pool never falls below its watermark (80% of 20,000) and no pool alarm is due. With a
        // smaller step the demand-sized target jumps over the first pool as the takes start, and pool_low or
        // forecast_pool_dry fire, rightly, whenever that refill takes longer than two samples on a busy machine.
        const secret = await register(instance.url, {
          key,
          startOffset,
          step: 20_000,
          maxPoolSize: 100_000,
          maxSizePerSecond: 0,
        });

        // Idle: the take rate is 0, so the forecast is "never" and nothing fires.
        await sleep(1500);
        expect(receiver.calls).toEqual([]);

        // Take ~100 ids a second for 4 s: the forecast crosses the horizon and stays inside it.
        const deadline = Date.now() + 4000;
        while (Date.now() < deadline) {
          expect((await takeIds(instance.url, key, secret, 10)).status).toBe(200);
          await sleep(100);
        }
        const forecastCalls = () => receiver.calls.filter((c) => c.alarm === 'forecast_js_safe_limit');
        await waitFor(() => forecastCalls().length > 0, {
          message: 'the webhook call',
          timeoutMs: 20_000,
          intervalMs: 100,
        });
        await sleep(1500);
        const seen = JSON.stringify(receiver.calls.map((c) => [c.alarm, c.status, c.entityKey]));
        expect(forecastCalls(), seen).toHaveLength(1);
        expect(receiver.calls, seen).toHaveLength(1);
        const [call0] = forecastCalls();
        expect(call0).toMatchObject({
          alarm: 'forecast_js_safe_limit',
          status: 'firing',
          severity: 'warning',
          entityKey: key,
          service: 'idpool',
        });
        expect(call0.details.seconds).toBeGreaterThan(0);
        expect(call0.details.seconds).toBeLessThan(30 * 86_400);
        expect(Date.parse(call0.details.at)).toBeGreaterThan(Date.now());
        expect(call0.message).toContain('2^53');

        // The same condition appears once in the log at warn, and in the dashboard data.
        const lines = alarmLines(instance, 'forecast_js_safe_limit');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatchObject({ level: 40, entityKey: key, severity: 'warning' });
        // The webhook URL (it may carry a token) is never logged.
        expect(instance.output()).not.toContain('receiver-secret');
        const ops = await call(`${instance.url}/admin/ops`, { token: ADMIN_TOKEN });
        expect(
          ops.body.alarms.recent.some(
            (a: any) => a.name === 'forecast_js_safe_limit' && a.entityKey === key && a.notified,
          ),
        ).toBe(true);
        expect(ops.body.alarms.active).toBeGreaterThanOrEqual(1);
        // The list is this process's own (each instance keeps its alarms), and says so.
        expect(ops.body.alarms.instance).toBe(`${hostname()}:${instance.proc.pid}`);
      });
    });

    describe('a Redis server change', () => {
      let redisServer: RedisServer;
      let schema: Awaited<ReturnType<typeof createTestSchema>>;
      let instance: Instance;
      let receiver: Awaited<ReturnType<typeof startReceiver>>;

      beforeAll(async () => {
        redisServer = await startRedisServer('aof');
        schema = await createTestSchema();
        receiver = await startReceiver();
        instance = await startInstance({
          IDPOOL_DATABASE_URL: schema.url,
          IDPOOL_REDIS_URL: redisServer.url,
          IDPOOL_ALERT_WEBHOOK_URL: receiver.url,
          IDPOOL_OPS_SAMPLE_MS: '200',
        });
      });

      afterAll(async () => {
        await instance?.stop();
        await redisServer?.stop();
        await receiver?.close();
        await schema?.drop();
      });

      it('raises redis_epoch_changed (critical, alias redis_server_changed) and pool_discarded once each, logged and posted', async () => {
        const key = uniqueKey('failover');
        const secret = await register(instance.url, { key, step: 100, maxPoolSize: 2000, maxSizePerSecond: 0 });
        await waitFor(async () => (await takeIds(instance.url, key, secret, 10)).status === 200, {
          message: 'ids',
          timeoutMs: 20_000,
          intervalMs: 100,
        });
        expect(receiver.calls).toEqual([]);

        // kill -9 and restart: same data (AOF), a new run_id.
        await redisServer.kill9();
        await redisServer.restart();
        await waitFor(
          () =>
            receiver.calls.some((c) => c.alarm === 'redis_epoch_changed') &&
            receiver.calls.some((c) => c.alarm === 'pool_discarded'),
          { message: 'both alarms posted', timeoutMs: 20_000, intervalMs: 100 },
        );
        await waitFor(async () => (await takeIds(instance.url, key, secret, 10)).status === 200, {
          message: 'ids again',
          timeoutMs: 20_000,
          intervalMs: 100,
        });
        await sleep(500);
        expect(receiver.calls.filter((c) => c.alarm === 'redis_epoch_changed')).toHaveLength(1);
        expect(receiver.calls.find((c) => c.alarm === 'redis_epoch_changed')).toMatchObject({
          alias: 'redis_server_changed',
          severity: 'critical',
          entityKey: null,
        });
        expect(receiver.calls.filter((c) => c.alarm === 'pool_discarded')).toEqual([
          expect.objectContaining({ entityKey: key, severity: 'warning' }),
        ]);
        expect(alarmLines(instance, 'redis_epoch_changed')).toEqual([
          expect.objectContaining({ level: 50, severity: 'critical', alias: 'redis_server_changed' }),
        ]);
        const metrics = await (await fetch(`${instance.url}/metrics`)).text();
        expect(metrics).toMatch(/^idpool_redis_server_changes_total 1$/m);
        expect(metrics).toContain(`idpool_pools_discarded_total{entity="${key}"} 1`);
        expect(metrics).toMatch(/^idpool_alarms_total\{alarm="redis_epoch_changed",severity="critical"\} 1$/m);
        // The former name, counted too for one release.
        expect(metrics).toMatch(/^idpool_alarms_total\{alarm="redis_server_changed",severity="critical"\} 1$/m);
      });
    });
  },
);
