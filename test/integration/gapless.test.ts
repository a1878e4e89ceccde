import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database';
import { type Service, createService } from '../../src/service';
import { createIdGenerator } from '../../src/library';
import { uniqueKey } from '../support/configs';
import { describeWithServices } from '../support/describe-with-services';
import { ADMIN_TOKEN, call } from '../support/http';
import { REDIS_URL, type ServiceNeeds, createTestSchema, testPrefix } from '../support/services';
import { inProcessConfig } from '../support/in-process';

const admin = { token: ADMIN_TOKEN };
/** A daily series in UTC: today's period by the database's clock (the servers here share the machine's). */
const FORMAT = 'INV{yyyy}{MM}{dd}-{seq:6}';
const today = () => new Date().toISOString().slice(0, 10).replaceAll('-', '');
const seqOf = (n: string) => Number(n.slice(n.lastIndexOf('-') + 1));

/** A gapless take as an invoice service sends it. */
function take(url: string, key: string, secret: string, body: Record<string, unknown>, idempotencyKey?: string) {
  return call<{ ids: string[]; error?: { code: string; message: string } }>(`${url}/apps/${key}/ids`, {
    token: secret,
    body,
    headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
  });
}

const BACKENDS: {
  name: string;
  needs: ServiceNeeds;
  open: () => Promise<{ env: Record<string, string>; drop(): Promise<void> }>;
}[] = [
  {
    name: 'MariaDB + Redis',
    needs: { mysql: true, redis: true },
    async open() {
      const schema = await createTestSchema('mysql');
      return { env: { IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: REDIS_URL }, drop: () => schema.drop() };
    },
  },
  {
    name: 'PostgreSQL + Redis',
    needs: { postgres: true, redis: true },
    async open() {
      const schema = await createTestSchema('postgres');
      return { env: { IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: REDIS_URL }, drop: () => schema.drop() };
    },
  },
  {
    name: 'SQLite file, embedded',
    needs: {},
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'idpool-gapless-'));
      return {
        env: { IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'idpool.db')}` },
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];

for (const backend of BACKENDS) {
  describeWithServices(`gapless series (in-process service, ${backend.name})`, backend.needs, () => {
    let service: Service;
    let url: string;
    let db: Database;
    let drop: () => Promise<void>;
    let databaseUrl: string;

    beforeAll(async () => {
      const opened = await backend.open();
      drop = () => opened.drop();
      databaseUrl = opened.env.IDPOOL_DATABASE_URL;
      const config = inProcessConfig({ ...opened.env, IDPOOL_COMPAT: 'leaf,tinyid' });
      service = await createService(config, { redisPrefix: testPrefix(), ops: { requestLog: 'off' } });
      url = `http://127.0.0.1:${await service.listen(0)}`;
      db = await openDatabase(opened.env.IDPOOL_DATABASE_URL, { migrate: false });
    });

    afterAll(async () => {
      await service?.stop();
      await db?.close();
      await drop?.();
    });

    const registerSeries = async (fields: Record<string, unknown> = {}) => {
      const key = uniqueKey('inv');
      const res = await call(`${url}/admin/apps`, {
        ...admin,
        body: { key, format: FORMAT, gapless: true, ...fields },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return { key, secret: res.body.secret as string };
    };

    it('refuses a broken gapless registration with a 400 naming the field, and registers nothing; gapless is fixed', async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ gapless: true }, /^gapless: only with format/],
        [{ gapless: 'yes', format: FORMAT }, /^gapless: must be true or false/],
        [{ gapless: true, format: FORMAT, mode: 'trend' }, /^gapless: .*monotonic/],
        [{ gapless: true, format: 'A{seq:16}' }, /^gapless: .*at most 15 digits/],
        [{ gapless: true, format: FORMAT, maxSizePerTimes: 101 }, /^maxSizePerTimes: .*at most 100/],
      ];
      for (const [fields, message] of cases) {
        const key = uniqueKey('bad');
        const res = await call(`${url}/admin/apps`, { ...admin, body: { key, ...fields } });
        expect(res.status, JSON.stringify(fields)).toBe(400);
        expect(res.body.error.message, JSON.stringify(fields)).toMatch(message);
        expect((await call(`${url}/admin/apps/${key}`, admin)).status).toBe(404);
      }
      const { key } = await registerSeries();
      const shown = await call(`${url}/admin/apps/${key}`, admin);
      expect(shown.body).toMatchObject({ format: FORMAT, reset: 'daily', gapless: true, maxSizePerTimes: 100 });
      const patched = await call(`${url}/admin/apps/${key}`, { ...admin, method: 'PATCH', body: { gapless: false } });
      expect(patched.status).toBe(409);
      const wider = await call(`${url}/admin/apps/${key}`, {
        ...admin,
        method: 'PATCH',
        body: { maxSizePerTimes: 500 },
      });
      expect(wider.status).toBe(400);
    });

    it('issues consecutive numbers from 1; a retry with its key gets the same numbers, another body a 409', async () => {
      const { key, secret } = await registerSeries();
      const first = await take(url, key, secret, { count: 3, reference: 'invoice-77' }, 'key-a');
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const day = today();
      expect(first.body.ids).toEqual([1, 2, 3].map((n) => `INV${day}-${String(n).padStart(6, '0')}`));
      const again = await take(url, key, secret, { count: 3, reference: 'invoice-77' }, 'key-a');
      expect(again.status).toBe(200);
      expect(again.body.ids).toEqual(first.body.ids);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      const otherCount = await take(url, key, secret, { count: 2, reference: 'invoice-77' }, 'key-a');
      expect(otherCount.status).toBe(409);
      const otherReference = await take(url, key, secret, { count: 3, reference: 'invoice-78' }, 'key-a');
      expect(otherReference.status).toBe(409);
      // Keys compare byte for byte: KEY-A is another key.
      const upper = await take(url, key, secret, {}, 'KEY-A');
      expect(upper.body.ids.map(seqOf)).toEqual([4]);
      const keyless = await take(url, key, secret, {});
      expect(keyless.body.ids.map(seqOf)).toEqual([5]);
      const tooMany = await take(url, key, secret, { count: 101 });
      expect(tooMany.status).toBe(400);
      const badReference = await take(url, key, secret, { reference: 'x'.repeat(129) });
      expect(badReference.status).toBe(400);
      const decoded = await call(`${url}/apps/${key}/ids/${first.body.ids[1]}`, { token: secret });
      expect(decoded.body).toMatchObject({ period: day, seq: '2' });
      // Paged in sequence order (10 after 9, not after 1), two at a time.
      for (let i = 0; i < 6; i++) await take(url, key, secret, {});
      const paged: string[] = [];
      for (let after = '0'; ;) {
        const page = await call(`${url}/apps/${key}/numbers?period=${day}&limit=2&after=${after}`, { token: secret });
        paged.push(...page.body.numbers.map((n: { seq: string }) => n.seq));
        if (page.body.next === null) break;
        after = page.body.next;
      }
      expect(paged).toEqual(Array.from({ length: 11 }, (_, i) => String(i + 1)));
      const audit = await call(`${url}/apps/${key}/numbers/audit?period=${day}`, { token: secret });
      expect(audit.body).toMatchObject({
        first: '1',
        last: '11',
        counter: '11',
        issued: 11,
        voided: 0,
        lost: 0,
        holes: [],
        duplicates: [],
      });
    });

    it('16 clients retrying every take once with its key: one continuous series, every answer in the ledger once', async () => {
      const { key, secret } = await registerSeries();
      const answered = new Map<string, string[]>();
      await Promise.all(
        Array.from({ length: 16 }, async (_, client) => {
          for (let i = 0; i < 15; i++) {
            const idem = `c${client}-${i}`;
            const count = 1 + ((client + i) % 3);
            const reference = `order-${client}-${i}`;
            // The retry goes out before the first answer is read, as a client that timed out sends it.
            const [a, b] = await Promise.all([
              take(url, key, secret, { count, reference }, idem),
              take(url, key, secret, { count, reference }, idem),
            ]);
            expect(a.status, JSON.stringify(a.body)).toBe(200);
            expect(b.status, JSON.stringify(b.body)).toBe(200);
            expect(b.body.ids).toEqual(a.body.ids);
            answered.set(idem, a.body.ids);
          }
        }),
      );
      const all = [...answered.values()]
        .flat()
        .map(seqOf)
        .sort((x, y) => x - y);
      expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
      for (const ids of answered.values()) expect(ids.map(seqOf)).toEqual(ids.map((_, k) => seqOf(ids[0]) + k));
      const audit = await call(`${url}/apps/${key}/numbers/audit`, { token: secret });
      expect(audit.body).toMatchObject({ period: today(), issued: all.length, holes: [], duplicates: [] });
      const page = await call(`${url}/apps/${key}/numbers?limit=1000`, { token: secret });
      const byNumber = new Map(
        page.body.numbers.map((n: { number: string; reference: string }) => [n.number, n.reference]),
      );
      for (const [idem, ids] of answered) for (const id of ids) expect(byNumber.get(id)).toBe(`order-${idem.slice(1)}`);
    }, 60_000);

    it('voids a number once (again: the first reason kept), never issues it again, and exports the ledger as CSV', async () => {
      const { key, secret } = await registerSeries();
      const { body } = await take(url, key, secret, { count: 3, reference: '=HYPERLINK("x")' }, 'v1');
      const [, second] = body.ids;
      const voided = await call(`${url}/apps/${key}/numbers/${second}/void`, {
        token: secret,
        body: { reason: 'cancelled, "duplicate" order' },
      });
      expect(voided.status).toBe(200);
      expect(voided.body).toMatchObject({ number: second, status: 'void', reason: 'cancelled, "duplicate" order' });
      const twice = await call(`${url}/apps/${key}/numbers/${second}/void`, {
        token: secret,
        body: { reason: 'another' },
      });
      expect(twice.body).toMatchObject({ status: 'void', reason: 'cancelled, "duplicate" order' });
      const notIssued = await call(`${url}/apps/${key}/numbers/INV${today()}-000099/void`, {
        token: secret,
        body: { reason: 'x' },
      });
      expect(notIssued.status).toBe(404);
      const notOurs = await call(`${url}/apps/${key}/numbers/ORD1/void`, { token: secret, body: { reason: 'x' } });
      expect(notOurs.status).toBe(400);
      const noReason = await call(`${url}/apps/${key}/numbers/${second}/void`, { token: secret, body: {} });
      expect(noReason.status).toBe(400);
      const next = await take(url, key, secret, {});
      expect(next.body.ids.map(seqOf)).toEqual([4]);
      const audit = await call(`${url}/apps/${key}/numbers/audit`, { token: secret });
      expect(audit.body).toMatchObject({ issued: 3, voided: 1, lost: 0, holes: [] });

      const csv = await fetch(`${url}/apps/${key}/numbers/audit?period=${today()}`, {
        headers: { authorization: `Bearer ${secret}`, accept: 'text/csv' },
      });
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      const lines = (await csv.text()).trimEnd().split('\r\n');
      expect(lines[0]).toBe('number,period,seq,issued_at,status,reference,reason');
      expect(lines).toHaveLength(5);
      expect(lines[2]).toMatch(
        new RegExp(`^${second},${today()},2,\\S+Z,void,"'=HYPERLINK\\(""x""\\)","cancelled, ""duplicate"" order"$`),
      );
      const byQuery = await fetch(`${url}/apps/${key}/numbers?format=csv`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      expect((await byQuery.text()).trimEnd().split('\r\n')).toEqual(lines);
      const wrongSecret = await call(`${url}/apps/${key}/numbers/audit`, { token: 'not-the-secret-0123456789' });
      expect(wrongSecret.status).toBe(401);
    });

    it('the audit computes holes from the ledger: a row removed, or a counter moved without its rows, shows as one', async () => {
      const { key, secret } = await registerSeries();
      await take(url, key, secret, { count: 5 }, 'h1');
      const day = today();
      const clean = await call(`${url}/apps/${key}/numbers/audit`, { token: secret });
      expect(clean.body.holes).toEqual([]);
      // What writing the ledger and the counter apart would leave: a row missing, a counter ahead of its rows.
      await db.execute('DELETE FROM gapless_number WHERE entity_key = ? AND period = ? AND seq IN (2, 3)', [key, day]);
      await db.execute('UPDATE gapless_counter SET seq = 7 WHERE entity_key = ? AND period = ?', [key, day]);
      const broken = await call(`${url}/apps/${key}/numbers/audit`, { token: secret });
      expect(broken.body.holes).toEqual([
        { from: '2', to: '3' },
        { from: '6', to: '7' },
      ]);
    });

    it("every door: Leaf's and Tinyid's routes and segment leases refuse it by name; the library's own connection refuses it", async () => {
      const { key, secret } = await registerSeries({ compat: ['leaf'] });
      const leaf = await fetch(`${url}/api/segment/get/${key}`);
      expect(leaf.status).toBe(500);
      expect(((await leaf.json()) as { message: string }).message).toBe('Result{id=-2, status=EXCEPTION}');
      const tinyid = await call(`${url}/tinyid/id/nextId?bizType=${key}&token=${secret}`);
      expect(tinyid.body).toMatchObject({ data: null, code: 6 });
      expect(tinyid.body.message).toMatch(/^gapless_not_served_here: /);
      const lease = await call(`${url}/apps/${key}/segments`, { token: secret, body: {} });
      expect(lease.status).toBe(409);
      expect(lease.body.error.code).toBe('gapless_not_served_here');
      // None of them issued anything.
      const audit = await call(`${url}/apps/${key}/numbers/audit`, { token: secret });
      expect(audit.body).toMatchObject({ issued: 0, counter: '0', holes: [] });
      const library = await createIdGenerator({ databaseUrl: databaseUrl });
      try {
        await expect(library.numbers(key, 1)).rejects.toThrow(/gapless series/);
      } finally {
        await library.close();
      }
      // Its counter moves only with its ledger: no raise.
      const raised = await call(`${url}/admin/apps/${key}/raise`, { ...admin, body: { period: today(), seq: 5 } });
      expect(raised.status).toBe(409);
      const listed = await call(`${url}/admin/apps?limit=1000`, admin);
      expect(listed.body.apps.find((a: { key: string }) => a.key === key)).toMatchObject({
        gapless: true,
        format: FORMAT,
      });
    });

    it('a plain business-number entity keeps no ledger: its audit is a 409', async () => {
      const key = uniqueKey('plain');
      const res = await call(`${url}/admin/apps`, { ...admin, body: { key, format: FORMAT } });
      const audit = await call(`${url}/apps/${key}/numbers/audit`, { token: res.body.secret });
      expect(audit.status).toBe(409);
    });
  });
}
