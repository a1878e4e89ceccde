import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { numberKeys } from '../../src/redis/keys';
import { type Service, createService } from '../../src/service';
import { serviceParts } from '../../src/service/internals';
import { FakeClock } from '../support/clock';
import { uniqueKey } from '../support/configs';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call, parseMetrics, register, takeIds, takeWhenReady } from '../support/http';
import { noonZone } from '../support/number-zones';
import {
  REDIS_URL,
  SQL_SERVERS,
  type TestSchema,
  clearPrefix,
  createTestSchema,
  testPrefix,
} from '../support/services';

const admin = { token: ADMIN_TOKEN };
const seqOf = (n: string) => BigInt(n.slice(n.lastIndexOf('-') + 1));

/** One series of `/metrics`, undefined when absent. */
async function gauge(url: string, name: string, entity: string): Promise<number | undefined> {
  const res = await fetch(`${url}/metrics`);
  return parseMetrics(await res.text()).get(`${name}{entity="${entity}"}`);
}

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(
    `business numbers (in-process service, ${name} + Redis)`,
    { [server]: true, redis: true },
    () => {
      let schema: TestSchema;
      let service: Service;
      let redis: Redis;
      let prefix: string;
      let url: string;

      beforeAll(async () => {
        schema = await createTestSchema(server);
        prefix = testPrefix();
        const config = loadConfig({
          IDPOOL_DATABASE_URL: schema.url,
          IDPOOL_REDIS_URL: REDIS_URL,
          IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN,
          IDPOOL_WORKER_ID: '1',
          IDPOOL_WORKER_ID_UNSAFE: '1',
          // The capacity test watches the forecast come and go: samples every 100 ms, its rate over 2 s.
          IDPOOL_OPS_SAMPLE_MS: '100',
          IDPOOL_OPS_PERIOD_RATE_WINDOW_MS: '2000',
        });
        service = await createService(config, { redisPrefix: prefix, ops: { requestLog: 'off' } });
        url = `http://127.0.0.1:${await service.listen(0)}`;
        redis = new Redis(REDIS_URL);
      });

      afterAll(async () => {
        await service?.stop();
        await clearPrefix(redis, prefix);
        redis.disconnect();
        await schema.drop();
      });

      it('refuses a broken registration with a 400 naming the field, and registers nothing', async () => {
        const cases: [Record<string, unknown>, RegExp][] = [
          [{ format: 'INV{yyyy}{ww}{seq:4}' }, /^format: unknown token \{ww\}/],
          [{ format: 'INV{yyyy}' }, /^format: needs one \{seq:N\}/],
          [{ format: 'A{seq:3}{seq:3}' }, /^format: must have exactly one/],
          [{ format: 'A{seq:19}' }, /^format: .*1 to 18/],
          [{ format: 'INV{yyyy}{MM}{dd}{seq:4}', reset: 'monthly' }, /^format: date tokens finer/],
          [{ format: 'INV{MM}{dd}{seq:4}' }, /^format: a daily number needs \{yyyy\} or \{yy\}/],
          [{ format: 'INV{yyyy}{MM}{dd}{seq:4}', timeZone: 'Mars/Olympus' }, /^timeZone: /],
          [{ format: 'INV{yyyy}{seq:4}', reset: 'weekly' }, /^reset: /],
          [{ reset: 'daily' }, /^reset: only with format/],
          [{ format: 'A{seq:3}', mode: 'snowflake' }, /^format: .*not snowflake/],
          [{ format: 'A{seq:3}', startOffset: 5 }, /^startOffset: not used by business numbers/],
        ];
        for (const [fields, message] of cases) {
          const key = uniqueKey('bad');
          const res = await call(`${url}/admin/apps`, { ...admin, body: { key, ...fields } });
          expect(res.status, JSON.stringify(fields)).toBe(400);
          expect(res.body.error.message, JSON.stringify(fields)).toMatch(message);
          expect((await call(`${url}/admin/apps/${key}`, admin)).status).toBe(404);
        }
      });

      it('takes formatted numbers from 1 in order, decodes them, and keeps format, reset and timeZone fixed', async () => {
        const key = uniqueKey('inv');
        const secret = await register(url, { key, format: 'INV{yyyy}{MM}{dd}-{seq:6}', timeZone: 'Asia/Shanghai' });
        const shown = await call(`${url}/admin/apps/${key}`, admin);
        expect(shown.body).toMatchObject({
          format: 'INV{yyyy}{MM}{dd}-{seq:6}',
          reset: 'daily',
          timeZone: 'Asia/Shanghai',
        });

        const first = await takeWhenReady(url, key, secret, 3);
        const second = await takeIds(url, key, secret, 2);
        const numbers = [...first.body.ids, ...second.body.ids];
        const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Shanghai' })
          .format(new Date())
          .replaceAll('-', '');
        // The test may straddle Shanghai's midnight: then the sequence restarts and the date moves on.
        if (numbers.every((n) => n.slice(3, 11) === today))
          expect(numbers).toEqual([1, 2, 3, 4, 5].map((s) => `INV${today}-${String(s).padStart(6, '0')}`));

        const decoded = await call(`${url}/apps/${key}/ids/${numbers[2]}`, { token: secret });
        expect(decoded.status).toBe(200);
        expect(decoded.body).toMatchObject({ number: numbers[2], reset: 'daily', timeZone: 'Asia/Shanghai', seq: '3' });
        expect(Date.parse(decoded.body.end) - Date.parse(decoded.body.start)).toBe(86_400_000);
        for (const bad of ['INV20261131-000001', 'ORD20261128-000001', '12'])
          expect((await call(`${url}/apps/${key}/ids/${bad}`, { token: secret })).status).toBe(400);

        const patch = (body: Record<string, unknown>) =>
          call(`${url}/admin/apps/${key}`, { ...admin, method: 'PATCH', body });
        const changed = await patch({ format: 'INV{yyyy}{MM}{dd}-{seq:8}' });
        expect(changed.status).toBe(409);
        expect(changed.body.error.message).toMatch(/register a new entity/);
        expect((await patch({ timeZone: 'UTC' })).status).toBe(409);
        expect((await patch({ reset: 'daily', maxSizePerTimes: 500 })).status).toBe(200);

        const lease = await call(`${url}/apps/${key}/segments`, { token: secret, body: {} });
        expect(lease.status).toBe(409);
        expect(lease.body.error.message).toMatch(/business numbers/);
      });

      it('a full period answers 503 period_exhausted with Retry-After until the next period; never a wider number', async () => {
        const key = uniqueKey('small');
        const secret = await register(url, { key, format: 'S{yyyy}-{seq:2}', step: 10, maxSizePerTimes: 10 });
        // A take that finds the pool short while a refill is on its way answers 503 with Retry-After, as clients
        // are told to retry: so is it here (a loaded machine's refill can be late); period_exhausted is the end.
        const take = async (count: number) => {
          for (;;) {
            const res = await takeIds(url, key, secret, count);
            if (res.status !== 503 || res.body.error?.code === 'period_exhausted') return res;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        };
        const got: string[] = [];
        for (let i = 0; i < 9; i++) got.push(...(await take(10)).body.ids);
        got.push(...(await take(9)).body.ids);
        expect(new Set(got).size).toBe(99);
        expect(got.every((n) => /^S\d{4}-\d{2}$/.test(n))).toBe(true);
        const full = await take(1);
        expect(full.status).toBe(503);
        expect(full.body.error?.code).toBe('period_exhausted');
        const retryAfter = Number(full.headers.get('retry-after'));
        const yearEnd = Date.UTC(new Date().getUTCFullYear() + 1, 0, 1);
        expect(Math.abs(retryAfter - (yearEnd - Date.now()) / 1000)).toBeLessThan(5);
        // The period's use in /metrics: all 99, and the forecast at 0 (run out).
        await expect.poll(() => gauge(url, 'idpool_number_period_used', key), { timeout: 10_000 }).toBe(99);
        expect(await gauge(url, 'idpool_number_period_capacity', key)).toBe(99);
        expect(await gauge(url, 'idpool_forecast_number_period_exhausted_seconds', key)).toBe(0);
      });

      it('capacity: /metrics, GET /admin/apps and the forecast alarm follow a {seq:3} entity taken near its capacity; the alarm clears once the takes stop', async () => {
        const key = uniqueKey('cap');
        const { timeZone, date } = noonZone();
        const secret = await register(url, { key, format: 'C{yyyy}{MM}{dd}-{seq:3}', timeZone, maxSizePerSecond: 0 });
        const forecastAlarm = () =>
          serviceParts(service)
            .ops.alarms.activeAlarms()
            .find((a) => a.name === 'forecast_period_exhausted' && a.entityKey === key);
        // Takes of 20 every 50 ms until the forecast alarm is up (two samples in a row saw the period fill
        // before midnight at this pace), however slowly a loaded machine samples; never past 900 of 999.
        let taken = 0;
        while (!forecastAlarm() && taken < 900) {
          // As a client does: the list of a new entity may still be filling on a loaded machine (503, Retry-After).
          expect((await takeWhenReady(url, key, secret, 20)).status).toBe(200);
          taken += 20;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const alarm = forecastAlarm();
        expect(alarm, `no forecast alarm after ${taken} taken`).toBeDefined();
        const period = date.replaceAll('-', '');
        expect(alarm!.message).toMatch(
          new RegExp(
            `^${key}: 3 digits run out at \\d\\d:\\d\\d \\(\\${timeZone}\\), before period ${period} ends at \\d{4}-\\d\\d-\\d\\d 00:00: \\d+ of 999 used, [\\d.]+/s$`,
          ),
        );
        expect(alarm!.details).toMatchObject({ period, capacity: '999', timeZone });

        const periodStart = Date.parse(`${date}T00:00:00${timeZone}`);
        await expect.poll(() => gauge(url, 'idpool_number_period_used', key), { timeout: 10_000 }).toBe(taken);
        expect(await gauge(url, 'idpool_number_period_capacity', key)).toBe(999);
        expect(await gauge(url, 'idpool_number_period_start_timestamp_seconds', key)).toBe(periodStart / 1000);
        expect(await gauge(url, 'idpool_number_period_end_timestamp_seconds', key)).toBe(periodStart / 1000 + 86_400);
        const shown = await call(`${url}/admin/apps/${key}`, admin);
        expect(shown.body.period).toMatchObject({
          id: period,
          timeZone,
          start: new Date(periodStart).toISOString(),
          used: String(taken),
          capacity: '999',
          digits: 3,
        });
        const listed = await call(`${url}/admin/apps?limit=1000`, admin);
        expect(listed.body.apps.find((a: { key: string }) => a.key === key).period.used).toBe(String(taken));

        // Nothing taken for a whole window (2 s): the rate is 0, the forecast never, the alarm resolved.
        await expect.poll(forecastAlarm, { timeout: 15_000 }).toBeUndefined();
        expect(await gauge(url, 'idpool_forecast_number_period_exhausted_seconds', key)).toBe(Number.POSITIVE_INFINITY);
        expect(
          serviceParts(service)
            .ops.alarms.recent()
            .find((a) => a.entityKey === key),
        ).toMatchObject({
          name: 'forecast_period_exhausted',
          status: 'resolved',
        });
        expect((await call(`${url}/admin/apps/${key}`, admin)).body.period).toMatchObject({
          used: String(taken),
          takePerSecond: 0,
          runsOutAt: null,
          runsOutBeforeEnd: false,
          runsOutLocal: null,
        });
      });

      it('raise starts a period above a hand-made counter; direct pops and takes share the numbers, none twice', async () => {
        const key = uniqueKey('moved');
        const secret = await register(url, { key, format: 'M{yyyy}{MM}{dd}{seq:8}', step: 100 });
        const period = new Date().toISOString().slice(0, 10).replaceAll('-', '');
        const raised = await call(`${url}/admin/apps/${key}/raise`, { ...admin, body: { period, seq: '5000' } });
        expect(raised.status).toBe(200);
        expect(
          (await call(`${url}/admin/apps/${key}/raise`, { ...admin, body: { period: '20261131', seq: 1 } })).status,
        ).toBe(400);
        const taken = (await takeWhenReady(url, key, secret, 5)).body.ids;
        if (taken[0].slice(1, 9) === period) expect(taken[0]).toBe(`M${period}00005001`);

        const k = numberKeys(key, prefix);
        // A direct consumer's guarded pop, the one plain pools have: now's period's numbers, formatted.
        const popped = (await redis.fcall('idpool_pop', 2, k.ids, k.epoch, 10)) as string[];
        expect(popped).toHaveLength(10);
        expect(popped.every((n) => /^M\d{8}\d{8}$/.test(n))).toBe(true);
        // The list expires at the period's last millisecond by the Redis clock: nothing pops its leftovers after it.
        const day = popped[0].slice(1, 9);
        const dayEnd = Date.UTC(Number(day.slice(0, 4)), Number(day.slice(4, 6)) - 1, Number(day.slice(6, 8)) + 1);
        expect(await redis.call('PEXPIRETIME', k.ids)).toBe(dayEnd - 1);
        const more = (await takeIds(url, key, secret, 20)).body.ids;
        const all = [...taken, ...popped, ...more];
        expect(new Set(all).size).toBe(all.length);
        // Monotonic: one order whoever takes.
        expect([...all].sort()).toEqual(all);
      });

      it('raise below the line is 409 and discards nothing; above it, in the ready range or past it, the next number is seq + 1', async () => {
        const key = uniqueKey('raised');
        const { timeZone, date } = noonZone();
        const period = date.replaceAll('-', '');
        const secret = await register(url, { key, format: 'Q{yyyy}{MM}{dd}-{seq:7}', timeZone, step: 100 });
        const seqs = async (count: number) => (await takeWhenReady(url, key, secret, count)).body.ids.map(seqOf);
        expect(await seqs(5)).toEqual([1n, 2n, 3n, 4n, 5n]);
        const raise = (seq: string) => call(`${url}/admin/apps/${key}/raise`, { ...admin, body: { period, seq } });
        for (const below of ['3', '5']) {
          const refused = await raise(below);
          expect(refused.status).toBe(409);
          expect(refused.body.error.message).toContain(`Q${period}-0000006`);
        }
        expect(await seqs(1)).toEqual([6n]);
        // Inside what waits ready in Redis: those above stay, the next is seq + 1.
        expect((await raise('40')).body).toEqual({ key, period, seq: '40' });
        expect(await seqs(3)).toEqual([41n, 42n, 43n]);
        // Past everything reserved.
        expect((await raise('5000')).body).toEqual({ key, period, seq: '5000' });
        expect(await seqs(2)).toEqual([5001n, 5002n]);
      });

      it('a take larger than what is left of a period is 409 period_short naming what is left, no alarm; a spent period is period_exhausted', async () => {
        const key = uniqueKey('short');
        const secret = await register(url, { key, format: 'T{yyyy}-{seq:2}', step: 10, maxSizePerTimes: 100 });
        const refused = await takeWhenReady(url, key, secret, 100);
        expect(refused.status).toBe(409);
        expect(refused.body.error).toMatchObject({ code: 'period_short' });
        expect(refused.body.error?.message).toMatch(/has 99 numbers left, fewer than the 100 asked for/);
        expect(
          serviceParts(service)
            .ops.alarms.activeAlarms()
            .find((a) => a.entityKey === key),
        ).toBeUndefined();
        expect((await takeWhenReady(url, key, secret, 90)).body.ids).toHaveLength(90);
        const short = await takeWhenReady(url, key, secret, 10);
        expect(short.status).toBe(409);
        expect(short.body.error?.message).toMatch(/has 9 numbers left/);
        expect((await takeWhenReady(url, key, secret, 9)).body.ids.map(seqOf)).toEqual(
          Array.from({ length: 9 }, (_, i) => BigInt(91 + i)),
        );
        const spent = await takeIds(url, key, secret, 1);
        expect(spent.status).toBe(503);
        expect(spent.body.error?.code).toBe('period_exhausted');
      });

      it('a burst sizes the list by demand within 1 % of the period or one largest batch: a batch of 1,000 on {seq:6} leaves at most 10,000 waiting', async () => {
        const key = uniqueKey('capped');
        const secret = await register(url, { key, format: 'B{yyyy}{MM}{dd}-{seq:6}', maxSizePerTimes: 1000 });
        expect((await takeWhenReady(url, key, secret, 1000)).body.ids).toHaveLength(1000);
        const k = numberKeys(key, prefix);
        // Refills triggered by the burst are done once the list stops growing.
        let before = -1;
        let waiting = await redis.llen(k.ids);
        while (waiting !== before) {
          before = waiting;
          await new Promise((resolve) => setTimeout(resolve, 500));
          waiting = await redis.llen(k.ids);
        }
        expect(waiting).toBeGreaterThan(0);
        expect(waiting).toBeLessThanOrEqual(10_000);
      });

      it('a database put back (its counter row restored) repeats no number: the Redis fence carries it past', async () => {
        const key = uniqueKey('restore');
        const secret = await register(url, { key, format: 'R{yyyy}-{seq:9}', step: 50, maxSizePerTimes: 50 });
        const before: string[] = [];
        for (let i = 0; i < 4; i++) before.push(...(await takeWhenReady(url, key, secret, 50)).body.ids);
        // The backup: the row as it was before anything was reserved.
        await serviceParts(service).db.execute('UPDATE number_period SET seq = 0 WHERE entity_key = ?', [key]);
        const after: string[] = [];
        for (let i = 0; i < 8; i++) {
          const res = await takeIds(url, key, secret, 50);
          expect(res.status).toBe(200);
          after.push(...res.body.ids);
        }
        const all = [...before, ...after];
        expect(new Set(all).size).toBe(all.length);
        expect(after.every((n) => seqOf(n) > 200n)).toBe(true);
      });

      it('a database put back under a full list is carried past its fence within a fence check, before any take', async () => {
        const key = uniqueKey('restore-idle');
        const secret = await register(url, { key, format: 'R{yyyy}-{seq:9}', step: 50, maxSizePerTimes: 50 });
        const before = (await takeWhenReady(url, key, secret, 10)).body.ids;
        const db = serviceParts(service).db;
        const counter = async () =>
          BigInt(
            (
              await db.query<{ s: string }>(
                `SELECT ${db.bigText('seq')} AS s FROM number_period WHERE entity_key = ?`,
                [key],
              )
            )[0].s,
          );
        // The list filled to its target: no refill reserves again while no take comes.
        let reserved = await counter();
        for (let settled = 0; settled < 5;) {
          await new Promise((r) => setTimeout(r, 100));
          const now = await counter();
          settled = now === reserved ? settled + 1 : 0;
          reserved = now;
        }
        // The backup: the row as it was before anything was reserved; no take follows, the list stays full.
        await db.execute('UPDATE number_period SET seq = 0 WHERE entity_key = ?', [key]);
        // The carry raises the counter, then reports: both are awaited.
        const carried = async () =>
          (await counter()) >= reserved && (await gauge(url, 'idpool_database_behind_total', key)) === 1;
        const deadline = Date.now() + 10_000;
        while (!(await carried()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        expect(await counter()).toBeGreaterThanOrEqual(reserved);
        expect(await gauge(url, 'idpool_database_behind_total', key)).toBe(1);
        const after = (await takeIds(url, key, secret, 50)).body.ids;
        const all = [...before, ...after];
        expect(new Set(all).size).toBe(all.length);
      });
    },
  );
}

/** Without Redis the process clock decides: the embedded default (SQLite), and a single instance on a SQL server. */
const WITHOUT_REDIS = [{ name: 'SQLite', server: undefined }, ...SQL_SERVERS];
for (const { server, name } of WITHOUT_REDIS) {
  describeWithServices(
    `business numbers without Redis (${name}, the process clock): across midnight and a restart`,
    server ? { [server]: true } : {},
    () => {
      it("restarts the sequence at 1 when the zone's day turns, and repeats none across a restart", async () => {
        const dir = mkdtempSync(join(tmpdir(), 'idpool-numbers-'));
        const schema = server && (await createTestSchema(server));
        // 23:59:58 in +05:30.
        const clock = new FakeClock({ now: Date.parse('2026-11-28T18:29:58.000Z') });
        const config = loadConfig({
          IDPOOL_DATABASE_URL: schema?.url ?? `sqlite:${join(dir, 'idpool.db')}`,
          IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN,
          IDPOOL_WORKER_ID: '1',
          IDPOOL_WORKER_ID_UNSAFE: '1',
        });
        const start = async () => {
          const s = await createService(config, { clock, ops: { requestLog: 'off' } });
          return { s, url: `http://127.0.0.1:${await s.listen(0)}` };
        };
        let { s, url } = await start();
        try {
          const secret = await register(url, {
            key: 'orders',
            format: 'ORD{yy}{MM}{dd}{seq:6}',
            timeZone: '+05:30',
            step: 10,
          });
          const before = (await takeIds(url, 'orders', secret, 3)).body.ids;
          expect(before).toEqual(['ORD261128000001', 'ORD261128000002', 'ORD261128000003']);
          clock.jump(2500);
          const after = (await takeIds(url, 'orders', secret, 2)).body.ids;
          expect(after).toEqual(['ORD261129000001', 'ORD261129000002']);
          await s.stop();
          ({ s, url } = await start());
          const restarted = (await takeIds(url, 'orders', secret, 2)).body.ids;
          // The rest of the step reserved before the restart is skipped (a gap), never repeated.
          expect(restarted).toEqual(['ORD261129000011', 'ORD261129000012']);
        } finally {
          await s.stop();
          rmSync(dir, { recursive: true, force: true });
          await schema?.drop();
        }
      });
    },
  );
}
