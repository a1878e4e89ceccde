import { afterEach, expect, it } from 'vitest';
import { SQL_STATEMENT_TIMEOUT_MS } from '../../src/db/mysql-driver';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call, takeIds } from '../support/http';
import { watchEntity } from '../support/outage';
import { type PrivateMariadbDeployment, privateMariadbDeployment } from '../support/private-deployment';
import { sleep } from '../support/wait';

/** A statement timeout plus room for a loaded machine: no answer may take longer. */
const ANSWER_BOUND_MS = SQL_STATEMENT_TIMEOUT_MS + 3000;

describeWithServices(
  'a hung database (SIGSTOPped mariadbd): bounded waits (invariant 7)',
  { privateMariadb: true },
  () => {
    let deployment: PrivateMariadbDeployment | undefined;

    afterEach(async () => {
      deployment?.mariadb.thaw();
      await deployment?.stop();
      deployment = undefined;
    });

    it('requests answer 503 within the statement timeout while it is frozen, and ids flow again after SIGCONT', async (ctx) => {
      const own = await privateMariadbDeployment();
      deployment = own;
      const { mariadb } = own;
      const entity = await watchEntity(await own.start(), { maxPoolSize: 500, maxSizePerTimes: 5 });
      const { instance, key, secret, issued } = entity;
      await entity.servesAgain();

      mariadb.freeze();
      const statuses: number[] = [];
      let slowest = 0;
      const until = Date.now() + 3 * SQL_STATEMENT_TIMEOUT_MS;
      while (Date.now() < until) {
        const started = Date.now();
        const [take, admin] = await Promise.all([
          takeIds(instance.url, key, secret, 5),
          call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN }),
        ]);
        slowest = Math.max(slowest, Date.now() - started);
        if (take.status === 200) issued.push(...take.body.ids);
        else {
          expect(take.status).toBe(503);
          expect(take.headers.get('retry-after')).toMatch(/^\d+$/);
        }
        statuses.push(take.status, admin.status);
        expect(admin.status).toBe(503); // needs the database for currentOffset
        expect(admin.body.error.code).toBe('unavailable');
      }
      expect(slowest).toBeLessThan(ANSWER_BOUND_MS);
      expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);

      mariadb.thaw();
      const firstIdMs = await entity.servesAgain(20_000);
      // The whole pool is served again, through refills: the connections dropped on timeout were replaced.
      for (let i = 0; i < 200; i++) {
        const res = await takeIds(instance.url, key, secret, 5);
        if (res.status === 200) issued.push(...res.body.ids);
        else await sleep(50);
      }
      expect(issued.length).toBeGreaterThan(500);
      entity.expectUnharmed();
      entity.expectNo500();
      const admin = await call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
      expect(admin.status).toBe(200);
      await ctx.annotate?.(`slowest answer while frozen: ${slowest} ms; first id ${firstIdMs} ms after SIGCONT`);
    }, 90_000);
  },
);
