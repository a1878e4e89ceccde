import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { Client as PgClient } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { idpool } from '../support/cli';
import { ADMIN_TOKEN, call, takeIds } from '../support/http';
import { type Instance, startInstance } from '../support/processes';
import { SQL_SERVERS, type SqlServer, type TestSchema, createTestSchema, sharedRedisEnv } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

/** Leaf's `leaf_alloc` and Tinyid's `tiny_id_info` / `tiny_id_token`, column for column as their own DDL defines them. */
const DDL: Record<SqlServer, { leaf: string[]; tinyid: string[] }> = {
  mysql: {
    leaf: [
      `CREATE TABLE leaf_alloc (
        biz_tag varchar(128) NOT NULL DEFAULT '',
        max_id bigint(20) NOT NULL DEFAULT '1',
        step int(11) NOT NULL,
        description varchar(256) DEFAULT NULL,
        update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
        PRIMARY KEY (biz_tag)
      ) ENGINE=InnoDB`,
    ],
    tinyid: [
      `CREATE TABLE tiny_id_info (
        id bigint(20) NOT NULL AUTO_INCREMENT,
        biz_type varchar(63) NOT NULL DEFAULT '',
        begin_id bigint(20) NOT NULL DEFAULT '0',
        max_id bigint(20) NOT NULL DEFAULT '0',
        step int(11) DEFAULT '0',
        delta int(11) NOT NULL DEFAULT '1',
        remainder int(11) NOT NULL DEFAULT '0',
        create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
        update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
        version bigint(20) NOT NULL DEFAULT '0',
        PRIMARY KEY (id),
        UNIQUE KEY uniq_biz_type (biz_type)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8`,
      `CREATE TABLE tiny_id_token (
        id int(11) unsigned NOT NULL AUTO_INCREMENT,
        token varchar(255) NOT NULL DEFAULT '',
        biz_type varchar(63) NOT NULL DEFAULT '',
        remark varchar(255) NOT NULL DEFAULT '',
        create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
        update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
        PRIMARY KEY (id)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8`,
    ],
  },
  // The same columns in PostgreSQL's types (neither project ships PostgreSQL DDL; teams that ran them there wrote this).
  postgres: {
    leaf: [
      `CREATE TABLE leaf_alloc (
        biz_tag varchar(128) NOT NULL DEFAULT '',
        max_id bigint NOT NULL DEFAULT 1,
        step int NOT NULL,
        description varchar(256) DEFAULT NULL,
        update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (biz_tag)
      )`,
    ],
    tinyid: [
      `CREATE TABLE tiny_id_info (
        id bigserial PRIMARY KEY,
        biz_type varchar(63) NOT NULL DEFAULT '' UNIQUE,
        begin_id bigint NOT NULL DEFAULT 0,
        max_id bigint NOT NULL DEFAULT 0,
        step int DEFAULT 0,
        delta int NOT NULL DEFAULT 1,
        remainder int NOT NULL DEFAULT 0,
        create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
        update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
        version bigint NOT NULL DEFAULT 0
      )`,
      `CREATE TABLE tiny_id_token (
        id serial PRIMARY KEY,
        token varchar(255) NOT NULL DEFAULT '',
        biz_type varchar(63) NOT NULL DEFAULT '',
        remark varchar(255) NOT NULL DEFAULT '',
        create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
        update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00'
      )`,
    ],
  },
};

/** Runs statements with `?` placeholders on one database of either server. */
async function sql(server: SqlServer, url: string, statements: [string, unknown[]?][]): Promise<void> {
  if (server === 'mysql') {
    const c = await createConnection({ uri: url });
    try {
      for (const [s, p] of statements) await c.query(s, p ?? []);
    } finally {
      await c.end();
    }
    return;
  }
  const c = new PgClient({ connectionString: url });
  await c.connect();
  try {
    for (const [s, p] of statements) {
      let i = 0;
      await c.query(
        s.replace(/\?/g, () => `$${++i}`),
        p ?? [],
      );
    }
  } finally {
    await c.end();
  }
}

/**
 * The first id of a just-imported entity on Leaf's route. Its pool fills as
 * the import releases it; on a loaded machine the take's bounded wait may end
 * first with Leaf's "no segment ready" (-3), which hands out nothing: asked
 * again, as a Leaf client would.
 */
async function firstLeafId(url: string, tag: string): Promise<string> {
  for (let i = 0; ; i++) {
    const res = await fetch(`${url}/api/segment/get/${tag}`);
    const body = await res.text();
    if (res.status === 200 || i === 50 || !body.includes('Result{id=-3,')) return body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const TWO_53 = 2n ** 53n;
const TOKEN = '0f673adf80504e2eaa552f5d791b644c';

for (const { server, name } of SQL_SERVERS) {
  describeWithServices(`idpool apps import-from leaf|tinyid (${name})`, { [server]: true, redis: true }, () => {
    let main: TestSchema;
    let second: TestSchema;
    let instance: Instance;
    let env: Record<string, string>;
    let dir: string;
    // Keys of their own: the shared Redis holds other tests' pools.
    const s = `_${randomBytes(3).toString('hex')}`;
    const k = (key: string) => `${key}${s}`;

    beforeAll(async () => {
      main = await createTestSchema(server);
      second = await createTestSchema(server);
      dir = mkdtempSync(join(tmpdir(), 'idpool-import-from-'));
      instance = await startInstance({
        IDPOOL_DATABASE_URL: main.url,
        ...sharedRedisEnv(),
        IDPOOL_COMPAT: 'leaf,tinyid',
      });
      env = { IDPOOL_URL: instance.url, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN };
      // The incumbents' tables beside idpool's own (a trigger below reaches both), a second Tinyid database apart.
      await sql(
        server,
        main.url,
        [...DDL[server].leaf, ...DDL[server].tinyid].map((d) => [d] as [string]),
      );
      await sql(
        server,
        second.url,
        DDL[server].tinyid.map((d) => [d] as [string]),
      );
      const leafRow = 'INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)';
      await sql(server, main.url, [
        [leafRow, [k('orders'), (TWO_53 + 7n).toString(), 2000, 'Orders']],
        [leafRow, [k('fresh'), '1', 1000, null]],
        [leafRow, [k('bad key!'), '5', 100, 'misfit']],
        [leafRow, [k('users.v2'), '3001', 1000, 'Users v2']],
      ]);
      const info =
        'INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES (?, ?, ?, ?, ?, ?, 1)';
      const token = 'INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, ?, ?)';
      await sql(server, main.url, [
        [info, [k('test'), '1', (TWO_53 + 100n).toString(), 100000, 1, 0]],
        [info, [k('test_odd'), '1', (TWO_53 + 40n).toString(), 100000, 2, 1]],
        [token, [TOKEN, k('test'), '1']],
        [token, [TOKEN, k('test_odd'), '1']],
        [token, ['short', k('test'), 'too short to be a secret']],
      ]);
      // The same biz type in a second Tinyid database, further along: its max_id wins.
      await sql(server, second.url, [
        [info, [k('test_odd'), '1', (TWO_53 + 1000n).toString(), 100000, 2, 1]],
        [token, ['second-database-token-abcdef', k('test_odd'), '2']],
      ]);
    }, 120_000);

    afterAll(async () => {
      await instance?.stop();
      await main?.drop();
      await second?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const registered = async () =>
      (
        (await call(`${instance.url}/admin/apps?limit=1000`, { token: ADMIN_TOKEN })).body.apps as {
          key: string;
        }[]
      ).map((a) => a.key);

    it('--dry-run prints the plan (first ids exact past 2^53), registers nothing, and exits as the real run would', async () => {
      const run = await idpool(['apps', 'import-from', 'leaf', '--database-url', main.url, '--dry-run'], env);
      expect(run.code, run.stderr).toBe(2); // the misfit row is skipped, as in the real run below
      expect(run.stderr).toContain('1 rows would be skipped (listed above); the rest would be imported (dry run)');
      expect(run.stdout).toContain(`would register ${k('orders')}: first id ${TWO_53 + 7n} (max_id ${TWO_53 + 7n})`);
      expect(run.stdout).toContain(`would register ${k('fresh')}: first id 1`);
      expect(run.stdout).toContain('3 to register, 1 skipped (dry run: nothing registered)');
      expect(run.stderr).toContain(`skipped "${k('bad key!')}": key does not fit idpool`);
      expect(await registered()).toEqual([]);
    });

    it('--only picks rows; Leaf rows start at max_id exactly, monotonic, on the Leaf routes', async () => {
      const run = await idpool(
        [
          'apps',
          'import-from',
          'leaf',
          '--database-url',
          main.url,
          '--only',
          k('orders'),
          '--secrets',
          join(dir, 'only.jsonl'),
        ],
        env,
      );
      expect(run.code, run.stderr).toBe(0);
      expect(await registered()).toEqual([k('orders')]);
      const view = (await call(`${instance.url}/admin/apps/${k('orders')}`, { token: ADMIN_TOKEN })).body;
      expect(view).toMatchObject({
        name: 'Orders',
        mode: 'monotonic',
        step: 2000,
        compat: ['leaf'],
        delta: 1,
        remainder: 0,
      });
      expect(view.startOffset).toBe((TWO_53 + 7n).toString());
      // The first id Leaf never issued, byte for byte on its own route, then the native route after it.
      expect(await firstLeafId(instance.url, k('orders'))).toBe((TWO_53 + 7n).toString());
      const [line] = readFileSync(join(dir, 'only.jsonl'), 'utf8').trim().split('\n');
      const { secret } = JSON.parse(line) as { secret: string };
      expect(statSync(join(dir, 'only.jsonl')).mode & 0o777).toBe(0o600);
      expect((await takeIds(instance.url, k('orders'), secret, 2)).body.ids).toEqual([
        (TWO_53 + 8n).toString(),
        (TWO_53 + 9n).toString(),
      ]);
    });

    it('imports the rest, reports the misfit key, and a re-run registers nothing twice and says what exists', async () => {
      const run = await idpool(['apps', 'import-from', 'leaf', '--database-url', main.url], env);
      expect(run.code).toBe(2); // a row was skipped
      expect(run.stdout).toContain(`exists     ${k('orders')}`);
      expect(run.stdout).toContain(`registered ${k('fresh')}: first id 1`);
      expect(run.stdout).toContain(`registered ${k('users.v2')}: first id 3001`);
      expect(run.stderr).toContain(`skipped "${k('bad key!')}"`);
      expect((await registered()).sort()).toEqual([k('fresh'), k('orders'), k('users.v2')].sort());
      expect(await (await fetch(`${instance.url}/api/segment/get/${k('users.v2')}`)).text()).toBe('3001');

      const again = await idpool(['apps', 'import-from', 'leaf', '--database-url', main.url, '--json'], env);
      expect(again.code).toBe(2);
      const out = JSON.parse(again.stdout) as { entities: { key: string; status: string }[]; moved: unknown[] };
      expect(out.entities.map((e) => e.status)).toEqual(['exists', 'exists', 'exists']);
      expect(out.moved).toEqual([]);
      expect((await registered()).length).toBe(3);
    });

    it('fails, naming the row, when the incumbent moves a row during the import', async () => {
      // Leaf still running: it takes a segment of "moving" the moment idpool registers it.
      await sql(server, main.url, [
        [
          'INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)',
          [k('moving'), '5001', 1000, null],
        ],
      ]);
      const move = 'UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = NEW.entity_key';
      await sql(
        server,
        main.url,
        server === 'mysql'
          ? [[`CREATE TRIGGER leaf_moves AFTER INSERT ON application FOR EACH ROW ${move}`]]
          : [
              [`CREATE FUNCTION leaf_moves() RETURNS trigger AS $$ BEGIN ${move}; RETURN NEW; END $$ LANGUAGE plpgsql`],
              ['CREATE TRIGGER leaf_moves AFTER INSERT ON application FOR EACH ROW EXECUTE FUNCTION leaf_moves()'],
            ],
      );
      const only = ['apps', 'import-from', 'leaf', '--database-url', main.url, '--only', k('moving')];
      try {
        const run = await idpool(only, env);
        expect(run.code).toBe(1);
        expect(run.stderr).toContain(
          `rows moved while importing (the incumbent is still issuing ids): ${k('moving')} (max_id 5001 -> 6001)`,
        );
      } finally {
        await sql(server, main.url, [['DROP TRIGGER leaf_moves' + (server === 'postgres' ? ' ON application' : '')]]);
      }
      // Registered at 5001 and held: served on no route (Leaf's own error, with a Retry-After), its pool never filled.
      const held = await fetch(`${instance.url}/api/segment/get/${k('moving')}`);
      expect(held.status).toBe(500);
      expect(await held.text()).toContain('Result{id=-3, status=EXCEPTION}');
      expect(held.headers.get('retry-after')).toBe('60');
      const view = (await call(`${instance.url}/admin/apps/${k('moving')}`, { token: ADMIN_TOKEN })).body;
      expect(view.held).toContain('idpool apps release KEY');
      expect(view.pool.size).toBe(0);
      // The incumbent stopped, release reads the row once more and moves the entity up to its new first safe id.
      const again = await idpool(['apps', 'release', k('moving'), '--database-url', main.url], env);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain(`released ${k('moving')} (its row had moved: raised to first id 6001)`);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(await (await fetch(`${instance.url}/api/segment/get/${k('moving')}`)).text());
      // Nothing below the new first safe id; in order (what was reserved past it before the raise is skipped).
      expect(BigInt(ids[0]) >= 6001n).toBe(true);
      expect(ids.map((id) => BigInt(id) - BigInt(ids[0]))).toEqual([0n, 1n, 2n]);
      // Once up, a re-run leaves it (and its pool) be.
      const third = await idpool([...only, '--json'], env);
      expect(third.code, third.stderr).toBe(0);
      expect((JSON.parse(third.stdout) as { entities: { raised?: boolean }[] }).entities[0].raised).toBeUndefined();
      expect(await (await fetch(`${instance.url}/api/segment/get/${k('moving')}`)).text()).toBe(
        (BigInt(ids[2]) + 1n).toString(),
      );
    });

    it('Tinyid: highest max_id of several databases, delta/remainder kept, tokens become working secrets', async () => {
      const urls = ['--database-url', main.url, '--database-url', second.url];
      const run = await idpool(['apps', 'import-from', 'tinyid', ...urls, '--json'], env);
      expect(run.code, run.stderr).toBe(0);
      const out = JSON.parse(run.stdout) as {
        entities: { key: string; status: string; firstId: string; secretsAdded: number }[];
      };
      // test: first id above 2^53 + 100 with delta 1; test_odd: the first odd number above the larger max_id, 2^53 + 1000.
      expect(out.entities).toEqual([
        { key: k('test'), status: 'registered', firstId: (TWO_53 + 101n).toString(), secretsAdded: 1 },
        { key: k('test_odd'), status: 'registered', firstId: (TWO_53 + 1001n).toString(), secretsAdded: 2 },
      ]);
      const odd = (await call(`${instance.url}/admin/apps/${k('test_odd')}`, { token: ADMIN_TOKEN })).body;
      expect(odd).toMatchObject({
        mode: 'trend',
        delta: 2,
        remainder: 1,
        step: 100000,
        maxSizePerSecond: 0,
        maxSizePerTimes: 100000,
      });
      expect(odd.secrets).toHaveLength(2);
      // One token served both biz types: it opens both entities; ids spaced by delta, none below the first safe id.
      for (const [key, first] of [
        [k('test'), TWO_53 + 101n],
        [k('test_odd'), TWO_53 + 1001n],
      ] as const) {
        const taken = await takeIds(instance.url, key, TOKEN, 50);
        expect(taken.status, JSON.stringify(taken.body)).toBe(200);
        for (const id of taken.body.ids) {
          expect(BigInt(id) >= first).toBe(true);
          if (key === k('test_odd')) expect(BigInt(id) % 2n).toBe(1n);
        }
      }
      expect((await takeIds(instance.url, k('test_odd'), 'second-database-token-abcdef')).status).toBe(200);
      expect((await takeIds(instance.url, k('test'), 'second-database-token-abcdef')).status).toBe(401);
      expect(run.stderr).toBe('');
      // A token that misfits idpool's secret rules is left out, and said so.
      expect((JSON.parse(run.stdout) as { notes: unknown }).notes).toEqual([
        { key: k('test'), note: 'a token of 5 characters left out: secrets are 16-256 printable ASCII characters' },
      ]);

      const again = await idpool(['apps', 'import-from', 'tinyid', ...urls, '--json'], env);
      expect(again.code, again.stderr).toBe(0);
      const twice = JSON.parse(again.stdout) as { entities: { status: string; secretsAdded: number }[] };
      expect(twice.entities.map((e) => [e.status, e.secretsAdded])).toEqual([
        ['exists', 0],
        ['exists', 0],
      ]);
      expect(
        (await call(`${instance.url}/admin/apps/${k('test_odd')}`, { token: ADMIN_TOKEN })).body.secrets,
      ).toHaveLength(2);
    });
    it('--key TAG=KEY: misfit tags imported under keys of your choice, answered under their own tags on Leaf and Tinyid routes only', async () => {
      const [leafTag, tinyTag] = [`order:v2${s}`, `pay/v1${s}`];
      const payToken = 'pay-token-0123456789abcdef';
      await sql(server, main.url, [
        [
          'INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)',
          [leafTag, '501', 100, null],
        ],
        [
          'INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES (?, ?, ?, ?, ?, ?, 1)',
          [tinyTag, '1', '900', 1000, 1, 0],
        ],
        ['INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, ?, ?)', [payToken, tinyTag, '1']],
      ]);
      const leafArgs = ['apps', 'import-from', 'leaf', '--database-url', main.url, '--only', leafTag];
      // A tag the table does not hold: a usage error naming it, nothing registered.
      const unknown = await idpool([...leafArgs, '--key', `order:v9${s}=${k('x')}`], env);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain(
        `--key "order:v9${s}=${k('x')}": the incumbent's table has no row "order:v9${s}"`,
      );
      // Without --key the dry run says how; with it, it shows the mapping and exits 0 (nothing skipped).
      const bare = await idpool([...leafArgs, '--dry-run'], env);
      expect(bare.code).toBe(2);
      expect(bare.stderr).toContain(`with --key '${leafTag}=KEY'`);
      const withKey = [...leafArgs, '--key', `${leafTag}=${k('order_v2')}`];
      const dry = await idpool([...withKey, '--dry-run'], env);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain(
        `would register ${k('order_v2')} (leaf tag "${leafTag}"): first id 501 (max_id 501)`,
      );
      expect(await registered()).not.toContain(k('order_v2'));

      const run = await idpool([...withKey, '--secrets', join(dir, 'alias.jsonl')], env);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`registered ${k('order_v2')} (leaf tag "${leafTag}"): first id 501`);
      const view = (await call(`${instance.url}/admin/apps/${k('order_v2')}`, { token: ADMIN_TOKEN })).body;
      expect(view).toMatchObject({
        alias: leafTag,
        incumbent: { kind: 'leaf', key: leafTag, live: false },
        held: null,
      });
      const { secret } = JSON.parse(readFileSync(join(dir, 'alias.jsonl'), 'utf8').trim()) as { secret: string };
      // Leaf's route answers the original tag (raw, as Leaf clients send it), then the key: one number line.
      const leafGet = (tag: string) => fetch(`${instance.url}/api/segment/get/${tag}`);
      // The row's first safe id, Leaf's max_id itself.
      const first = BigInt(await firstLeafId(instance.url, leafTag));
      expect(first).toBe(501n);
      expect(await (await leafGet(k('order_v2'))).text()).toBe((first + 1n).toString());
      // Tinyid's routes answer it too, with the entity's own secret and nothing else.
      const tinyid = async (route: string, bizType: string, token: string) =>
        (await fetch(
          `${instance.url}/tinyid/id/${route}?${new URLSearchParams({ bizType, token, batchSize: '2' }).toString()}`,
        ).then((r) => r.json())) as { data: unknown; code: number };
      expect(await tinyid('nextId', leafTag, secret)).toMatchObject({
        code: 200,
        data: [Number(first + 2n), Number(first + 3n)],
      });
      expect(await tinyid('nextId', leafTag, payToken)).toMatchObject({ code: 5 });

      // A Tinyid biz type the same way: its token opens it under its own name on Tinyid's routes.
      const tiny = await idpool(
        [
          'apps',
          'import-from',
          'tinyid',
          '--database-url',
          main.url,
          '--only',
          tinyTag,
          '--key',
          `${tinyTag}=${k('pay_v1')}`,
        ],
        env,
      );
      expect(tiny.code, tiny.stderr).toBe(0);
      expect(tiny.stdout).toContain(`registered ${k('pay_v1')} (tinyid tag "${tinyTag}"): first id 901`);
      // Trend mode (Tinyid's clients hand out of their own segments): unique, none below the first safe id.
      const pay = await tinyid('nextId', tinyTag, payToken);
      expect(pay.code).toBe(200);
      const payIds = pay.data as number[];
      expect(new Set(payIds).size).toBe(2);
      for (const id of payIds) expect(id >= 901).toBe(true);
      const segment = (await tinyid('nextSegmentId', tinyTag, payToken)).data as { currentId: number };
      expect(segment.currentId >= 900).toBe(true);
      // It did not opt in to Leaf: Leaf's route refuses its tag as it refuses its key.
      for (const name of [tinyTag, k('pay_v1')]) {
        const refused = await leafGet(encodeURIComponent(name));
        expect(refused.status).toBe(500);
        expect(await refused.text()).toContain('Result{id=-2, status=EXCEPTION}');
      }

      // The alias is no second key: the native and admin routes know only the key...
      const native = await call(`${instance.url}/apps/${encodeURIComponent(leafTag)}/ids`, {
        method: 'POST',
        token: secret,
        body: { count: 1 },
      });
      expect(native.status).toBeGreaterThanOrEqual(400);
      expect(native.status).toBeLessThan(500);
      expect(
        (await call(`${instance.url}/admin/apps/${encodeURIComponent(leafTag)}`, { token: ADMIN_TOKEN })).status,
      ).not.toBe(200);
      // ...a hold of the entity holds its tag on both routes...
      const hold = await call(`${instance.url}/admin/apps/${k('order_v2')}/hold`, {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { reason: 'checking the alias is held too' },
      });
      expect(hold.status, JSON.stringify(hold.body)).toBe(200);
      const held = await leafGet(leafTag);
      expect(held.status).toBe(500);
      expect(await held.text()).toContain('Result{id=-3, status=EXCEPTION}');
      expect(await tinyid('nextId', leafTag, secret)).toMatchObject({ code: 6, data: null });
      expect(
        (
          await call(`${instance.url}/admin/apps/${k('order_v2')}/release`, {
            method: 'POST',
            token: ADMIN_TOKEN,
            body: {},
          })
        ).status,
      ).toBe(200);
      // Released: served again on its tag, above what it served before (the hold discarded its pool).
      const after = await firstLeafId(instance.url, leafTag);
      expect(BigInt(after) > first + 3n).toBe(true);
      // ...and no other entity can take the tag, nor name a tag that fits a key as its alias.
      const taken = await call(`${instance.url}/admin/apps`, {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { key: k('thief'), compat: ['leaf'], incumbent: { kind: 'leaf', key: leafTag, live: false } },
      });
      expect(taken.status).toBe(409);
      expect(taken.body.error.message).toContain(`"${leafTag}" is already the alias of another entity`);
      const fits = await call(`${instance.url}/admin/apps`, {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { key: k('thief'), compat: ['leaf'], incumbent: { kind: 'leaf', key: k('orders'), live: false } },
      });
      expect(fits.status).toBe(400);
      expect(await registered()).not.toContain(k('thief'));
      expect(await (await leafGet(leafTag)).text()).toBe((BigInt(after) + 1n).toString());

      // The same import onto an idpool on SQLite: its migration adds the alias there too.
      const lite = await startInstance({
        IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'alias.db')}`,
        // No Redis: the shared one holds the MariaDB instance's pool of the same key.
        IDPOOL_REDIS_URL: '',
        IDPOOL_COMPAT: 'leaf',
      });
      try {
        const onLite = await idpool(withKey, { IDPOOL_URL: lite.url, IDPOOL_ADMIN_TOKEN: ADMIN_TOKEN });
        expect(onLite.code, onLite.stderr).toBe(0);
        expect(await firstLeafId(lite.url, leafTag)).toBe('501');
      } finally {
        await lite.stop();
      }
    });
  });
}
