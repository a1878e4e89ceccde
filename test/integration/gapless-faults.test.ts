import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Connection, createConnection } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { expectOneLineError, idpool, json } from '../support/cli';
import { uniqueKey } from '../support/configs';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call, register } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { createTestSchema, sharedRedisEnv } from '../support/services';
import { sleep } from '../support/wait';
import { expectContinuousLedger, gaplessTake as take, invoiceClients, seqOf } from '../support/gapless-clients';

const FORMAT = 'INV{yyyy}{MM}{dd}-{seq:6}';
const today = () => new Date().toISOString().slice(0, 10).replaceAll('-', '');
const admin = { IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN };

describe('a gapless series whose SQLite file is restored from a backup (real processes, the high-water file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-gapless-restore-'));
  const file = join(dir, 'idpool.db');
  const env = { IDPOOL_DATABASE_URL: `sqlite:${file}`, IDPOOL_REQUEST_LOG: '0' };
  const running: Instance[] = [];
  const start = async () => {
    const instance = await startInstance(env);
    running.push(instance);
    return instance;
  };
  afterAll(async () => {
    await Promise.all(running.map((i) => i.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops with 503 gapless_ledger_behind, reconciles with one command (the lost range entered lost), then issues above it', async () => {
    let instance = await start();
    const key = uniqueKey('inv');
    const secret = await register(instance.url, { key, format: FORMAT, gapless: true });
    for (let i = 1; i <= 10; i++) expect((await take(instance.url, key, secret, `k${i}`)).status).toBe(200);
    expect(await instance.stop()).toBe(0);
    copyFileSync(file, join(dir, 'backup.db'));

    instance = await start();
    const printed: string[] = [];
    for (let i = 11; i <= 15; i++) printed.push(...(await take(instance.url, key, secret, `k${i}`)).body.ids);
    expect(printed.map(seqOf)).toEqual([11, 12, 13, 14, 15]);
    expect(await instance.stop()).toBe(0);

    copyFileSync(join(dir, 'backup.db'), file);
    instance = await start();
    // A new take, and a retry of a take the restore lost, both: the restored ledger would hand out 11 again.
    for (const idem of ['k16', 'k12']) {
      const refused = await take(instance.url, key, secret, idem);
      expect(refused.status).toBe(503);
      expect(refused.body.error?.code).toBe('gapless_ledger_behind');
      expect(refused.headers.get('retry-after')).toBe('60');
    }
    const cli = { ...admin, IDPOOL_URL: instance.url, IDPOOL_SECRET: secret };
    const reconciled = json(await idpool(['--json', 'numbers', 'reconcile', key, '--period', today()], cli));
    expect(reconciled).toMatchObject({ period: today(), record: 'high-water file', lost: { from: '11', to: '15' } });
    const again = json(await idpool(['--json', 'numbers', 'reconcile', key, '--period', today()], cli));
    expect(again.lost).toBeUndefined();

    const next = await take(instance.url, key, secret, 'k16');
    expect(next.status).toBe(200);
    expect(next.body.ids.map(seqOf)).toEqual([16]);
    const audit = json(await idpool(['--json', 'numbers', 'audit', key, '--period', today()], cli));
    expect(audit).toMatchObject({ first: '1', last: '16', issued: 11, lost: 5, voided: 0, holes: [], duplicates: [] });
    const csv = await idpool(['numbers', 'export', key, '--period', today()], cli);
    const lines = csv.stdout.trimEnd().split('\r\n');
    expect(lines).toHaveLength(17);
    for (const n of printed) expect(csv.stdout).toMatch(new RegExp(`^${n},${today()},${seqOf(n)},\\S+,lost,,`, 'm'));
    // An empty --period is the server's 400, not a query whose `after` never arrives (the first page forever).
    expectOneLineError(await idpool(['numbers', 'export', key, '--period', ''], cli), 2, /period must name a period/);
  }, 120_000);
});

describeWithServices(
  'a gapless series through kill -9 mid-transaction and a restored database (real processes, MariaDB + Redis)',
  { mysql: true, redis: true },
  () => {
    const running: Instance[] = [];
    let drop: (() => Promise<void>) | undefined;
    let sql: Connection | undefined;
    afterAll(async () => {
      await Promise.all(running.map((i) => i.kill9()));
      await sql?.end();
      await drop?.();
    });

    it('clients retrying with their keys across kill -9 between the counter UPDATE and the ledger INSERT: every answer in the ledger, no hole, no duplicate', async () => {
      const schema = await createTestSchema('mysql');
      drop = () => schema.drop();
      const env = { IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv(), IDPOOL_REQUEST_LOG: '0' };
      const instances = [await startInstance(env), await startInstance(env)];
      running.push(...instances);
      const urls = () =>
        instances.filter((i) => i.proc.exitCode === null && i.proc.signalCode === null).map((i) => i.url);
      const key = uniqueKey('inv');
      const secret = await register(instances[0].url, { key, format: FORMAT, gapless: true });
      sql = await createConnection({ uri: schema.url });

      const clients = invoiceClients(urls, key, secret);
      let killedMidTransaction = 0;
      for (let round = 0; round < 3; round++) {
        await sleep(400);
        // A gap lock above the ledger's last row (its next sequence looked up, not there): takes move
        // the counter, read the ledger's last row, then wait at their ledger INSERT.
        await sql.query('BEGIN');
        await sql.query(
          'SELECT seq FROM gapless_number WHERE entity_key = ? AND period = ? AND seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM gapless_number WHERE entity_key = ?) FOR UPDATE',
          [key, today(), key],
        );
        await sleep(500);
        const [waiting] = (await sql.query(
          "SELECT COUNT(*) AS n FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT' AND trx_rows_modified >= 1",
        )) as [{ n: number | string }[], unknown];
        killedMidTransaction += Number(waiting[0].n);
        const victim = instances[round % 2];
        await victim.kill9();
        await sql.query('ROLLBACK');
        await sleep(300);
        instances[round % 2] = await startInstance(env);
        running.push(instances[round % 2]);
      }
      await clients.stop();
      // Transactions were under way, their counter moved, when their instance was killed.
      expect(killedMidTransaction).toBeGreaterThan(0);
      expect(clients.seen.wrongRefusals).toEqual([]);
      await expectContinuousLedger(instances[0].url, key, secret, clients.answered);
    }, 180_000);

    it('a ledger restored behind the Redis record stops at 503 (also at the instance whose last take the restore kept), and the reconcile enters the lost numbers', async () => {
      const schema = await createTestSchema('mysql');
      const dropFirst = drop;
      drop = async () => {
        await dropFirst?.();
        await schema.drop();
      };
      const env = { IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv(), IDPOOL_REQUEST_LOG: '0' };
      const [instance, other] = [await startInstance(env), await startInstance(env)];
      running.push(instance, other);
      const key = uniqueKey('inv');
      const secret = await register(instance.url, { key, format: FORMAT, gapless: true });
      for (let i = 1; i <= 4; i++) expect((await take(instance.url, key, secret, `r${i}`)).status).toBe(200);
      const db = await createConnection({ uri: schema.url });
      // The backup: both tables as they are now.
      await db.query('CREATE TABLE backup_counter AS SELECT * FROM gapless_counter');
      await db.query('CREATE TABLE backup_number AS SELECT * FROM gapless_number');
      // Another instance issues on: the first still knows the counter at 4, where the restore puts it back.
      for (let i = 5; i <= 7; i++) expect((await take(other.url, key, secret, `r${i}`)).status).toBe(200);
      // The restore.
      await db.query('DELETE FROM gapless_number');
      await db.query('DELETE FROM gapless_counter');
      await db.query('INSERT INTO gapless_counter SELECT * FROM backup_counter');
      await db.query('INSERT INTO gapless_number SELECT * FROM backup_number');
      await db.end();

      const sameCounter = await take(instance.url, key, secret, 'r8');
      expect(sameCounter.status).toBe(503);
      expect(sameCounter.body.error?.code).toBe('gapless_ledger_behind');
      const refused = await take(other.url, key, secret, 'r8');
      expect(refused.status).toBe(503);
      expect(refused.body.error?.code).toBe('gapless_ledger_behind');
      const reconciled = await call(`${instance.url}/admin/apps/${key}/numbers/reconcile`, {
        token: ADMIN_TOKEN,
        body: {},
      });
      expect(reconciled.body).toMatchObject({ period: today(), record: 'redis', lost: { from: '5', to: '7' } });
      const next = await take(instance.url, key, secret, 'r8');
      expect(next.body.ids.map(seqOf)).toEqual([8]);
      const audit = await call(`${instance.url}/apps/${key}/numbers/audit`, { token: secret });
      expect(audit.body).toMatchObject({ issued: 5, lost: 3, holes: [], duplicates: [], last: '8' });
    }, 120_000);
  },
);
