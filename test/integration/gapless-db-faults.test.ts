/**
 * A gapless series (issue 47, item 5) through the database's faults, on
 * real processes: two instances on a private mariadbd in a network
 * namespace of its own, reached over a veth link (test/support/netns.ts),
 * eight invoice services retrying every take with its key until a 200.
 * The database frozen (SIGSTOP: slow, every statement times out), the link
 * cut half-open one way (the answers lost after the commit) and both ways,
 * and the server killed and started again on its data (a failover to a
 * server with every commit; one that lost commits is a restore,
 * gapless-faults.test.ts). After each: every answered number in the ledger
 * once under its key, no hole, no duplicate, nothing else in the ledger.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniqueKey } from '../support/configs';
import { describeWithServices } from '../support/describe-with-services';
import { expectContinuousLedger, invoiceClients } from '../support/gapless-clients';
import { register } from '../support/http';
import { type PrivateMariadb, startPrivateMariadb } from '../support/mariadb';
import { Lab, type Link, removeLeftoverLabs } from '../support/netns';
import { type Instance, startInstance } from '../support/processes';
import { sharedRedisEnv } from '../support/services';
import { sleep } from '../support/wait';

const FORMAT = 'INV{yyyy}{MM}{dd}-{seq:6}';
/** Longer than a statement's bound (3 s, db/mysql-driver.ts): takes under way time out and are retried. */
const FAULT_MS = 4000;

describeWithServices(
  'a gapless series through a slow, cut and failed-over database (private mariadbd behind a veth link, Redis, real processes)',
  { redis: true, netns: true, privateMariadb: true },
  () => {
    const lab = new Lab();
    let link: Link;
    let db: PrivateMariadb | undefined;
    const instances: Instance[] = [];

    beforeAll(async () => {
      removeLeftoverLabs();
      const ns = await lab.namespace('db');
      link = await lab.link(undefined, ns);
      db = await startPrivateMariadb({ netns: ns, host: link.b.addr });
      const env = { IDPOOL_DATABASE_URL: db.url, ...sharedRedisEnv(), IDPOOL_REQUEST_LOG: '0' };
      instances.push(await startInstance(env), await startInstance(env));
    }, 90_000);

    afterAll(async () => {
      await Promise.all(instances.map((i) => i.kill9()));
      await db?.destroy();
      await lab.destroy();
    });

    /** Invoice services on both instances through `fault`; then the ledger checked. */
    async function through(fault: () => Promise<void>) {
      const key = uniqueKey('inv');
      const secret = await register(instances[0].url, { key, format: FORMAT, gapless: true });
      const clients = invoiceClients(() => instances.map((i) => i.url), key, secret);
      await sleep(500);
      const beforeFault = clients.answered.size;
      await fault();
      const afterHeal = clients.answered.size;
      // Numbers again from both instances after the fault.
      while (clients.answered.size < afterHeal + 20) await sleep(100);
      await clients.stop();
      expect(beforeFault).toBeGreaterThan(0);
      // The fault made clients send takes again (after a timeout or a 503), and every refusal was a 503 with Retry-After.
      expect(clients.seen.retried).toBeGreaterThan(0);
      expect(clients.seen.wrongRefusals).toEqual([]);
      await expectContinuousLedger(instances[0].url, key, secret, clients.answered);
      return clients.seen;
    }

    it('a database frozen for 4 s (SIGSTOP): every take under way times out and is retried with its key', async () => {
      await through(async () => {
        db!.freeze();
        await sleep(FAULT_MS);
        db!.thaw();
      });
    }, 60_000);

    it('the link cut towards the instances for 4 s (half-open: the database commits, the answer is lost): the retry answers the committed numbers', async () => {
      const seen = await through(async () => {
        await lab.cut(link, ['a']);
        await sleep(FAULT_MS);
        await lab.heal(link);
      });
      // Takes committed whose answer never came: their retries found them in the ledger.
      expect(seen.replayed).toBeGreaterThan(0);
    }, 60_000);

    it('the link cut both ways for 4 s (half-open: sends succeed, nothing arrives)', async () => {
      await through(async () => {
        await lab.cut(link);
        await sleep(FAULT_MS);
        await lab.heal(link);
      });
    }, 60_000);

    it('the database killed (kill -9) and started again on its data, as a failover to a server with every commit', async () => {
      await through(async () => {
        await db!.kill9();
        await sleep(500);
        await db!.restart();
      });
    }, 60_000);
  },
);
