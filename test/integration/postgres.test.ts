/**
 * What only PostgreSQL needs proving (the invariant suites run on it through
 * SQL_SERVERS): a database that does not exist yet is created once by
 * several processes starting at once, a user who may not create it is told
 * what to do, and a statement stuck behind a row lock ends within the
 * statement timeout as "unavailable" instead of hanging, and a service whose
 * PostgreSQL is killed or frozen answers 503 with Retry-After, never hangs,
 * and serves again by itself when the server is back.
 */
import { randomBytes } from 'node:crypto';
import { Client, escapeIdentifier } from 'pg';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { systemClock } from '../../src/clock';
import { POSTGRES_STATEMENT_TIMEOUT_MS, openDatabase } from '../../src/db/database';
import { NotFoundError, UnavailableError } from '../../src/errors';
import { SqlSegmentAllocator } from '../../src/segment/allocator';
import { migrations } from '../../migrations';
import { ADMIN_TOKEN, call, register, takeIds } from '../support/http';
import { type PostgresServer, startPostgresServer } from '../support/postgres-server';
import { type Instance, startInstance } from '../support/processes';
import { POSTGRES_URL, createTestSchema, schemaPrefix } from '../support/services';
import { describeWithServices } from '../support/describe-with-services';

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function admin<T>(run: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: POSTGRES_URL });
  await c.connect();
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

/** A URL naming a database that does not exist; it is dropped after the test if something created it. */
function missingDatabaseUrl(user = 'postgres'): { url: string; name: string } {
  const name = `${schemaPrefix()}${randomBytes(5).toString('hex')}`;
  cleanups.push(() => admin((c) => c.query(`DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`)));
  const u = new URL(POSTGRES_URL);
  u.username = user;
  u.pathname = `/${name}`;
  return { url: u.toString(), name };
}

/** A fresh database of this test's own, migrated, with an allocator and registry on it. */
async function freshDatabase() {
  const schema = await createTestSchema('postgres');
  cleanups.push(() => schema.drop());
  const db = await openDatabase(schema.url);
  cleanups.push(() => db.close());
  return {
    url: schema.url,
    registry: new EntityRegistry(new SqlEntityStore(db), systemClock),
    allocator: new SqlSegmentAllocator(db),
  };
}

describeWithServices('PostgreSQL specifics', { postgres: true }, () => {
  it('four service processes starting at once on a database that does not exist yet: created once, migrated once, all serve', async () => {
    const { url } = missingDatabaseUrl();
    const instances: Instance[] = [];
    cleanups.push(() => Promise.all(instances.map((i) => i.stop())));
    const env = { IDPOOL_DATABASE_URL: url, IDPOOL_REDIS_URL: '' };
    instances.push(...(await Promise.all(Array.from({ length: 4 }, () => startInstance(env)))));

    const db = await openDatabase(url, { migrate: false });
    try {
      const applied = await db.query<{ name: string }>('SELECT name FROM migrations ORDER BY id');
      expect(applied.map((m) => m.name)).toEqual(migrations.map((m) => m.name));
    } finally {
      await db.close();
    }
    // Each instance works on the one schema (in-process pools: each reserves its own segments).
    const secret = await register(instances[0].url, {
      key: 'orders',
      step: 100,
      maxPoolSize: 1000,
      maxSizePerSecond: 0,
    });
    const ids: string[] = [];
    for (const i of instances) {
      const res = await takeIds(i.url, 'orders', secret, 50);
      if (res.status !== 200) continue; // another instance may not have seen the entity yet
      ids.push(...res.body.ids);
    }
    expect(ids.length).toBeGreaterThanOrEqual(50);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a user who may not create the missing database is told which database and what to do', async () => {
    const role = `idpool_t_role_${randomBytes(4).toString('hex')}`;
    await admin((c) => c.query(`CREATE ROLE ${escapeIdentifier(role)} LOGIN NOCREATEDB`));
    cleanups.push(() => admin((c) => c.query(`DROP ROLE IF EXISTS ${escapeIdentifier(role)}`)));
    const { url, name } = missingDatabaseUrl(role);
    const err = await openDatabase(url).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(
      new RegExp(`PostgreSQL database "${name}" does not exist on .* could not be created \\(permission denied`),
    );
    expect(err?.message).toContain(`CREATE DATABASE "${name}"`);
    const exists = await admin((c) => c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]));
    expect(exists.rowCount).toBe(0);
  });

  it('a reservation stuck behind a row lock ends within the statement timeout as unavailable; the next one succeeds', async () => {
    const { url, registry, allocator } = await freshDatabase();
    await registry.register({ key: 'orders', mode: 'monotonic' });
    const before = await allocator.reserve('orders', 100);

    const holder = new Client({ connectionString: url });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query('BEGIN');
    await holder.query("SELECT current_offset FROM application WHERE entity_key = 'orders' FOR UPDATE");
    const started = Date.now();
    const stuck = await allocator.reserve('orders', 100).then(
      () => undefined,
      (e: unknown) => e,
    );
    const waited = Date.now() - started;
    expect(stuck).toBeInstanceOf(UnavailableError);
    expect((stuck as UnavailableError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(waited).toBeGreaterThanOrEqual(POSTGRES_STATEMENT_TIMEOUT_MS - 500);
    expect(waited).toBeLessThan(POSTGRES_STATEMENT_TIMEOUT_MS + 5000); // generous: the machine is loaded
    await holder.query('ROLLBACK');

    // The cancelled statement changed nothing: the next segment follows the last one.
    const after = await allocator.reserve('orders', 100);
    expect(after.start).toBe(before.end);
  });

  it('reserves through UPDATE … RETURNING: unknown and retired entities are refused, the end of the 63-bit line is unavailable', async () => {
    const { registry, allocator } = await freshDatabase();
    await registry.register({ key: 'users', mode: 'monotonic' });
    await registry.register({ key: 'edge', mode: 'monotonic', startOffset: 2n ** 63n - 150n });
    await expect(allocator.reserve('nobody', 10)).rejects.toBeInstanceOf(NotFoundError);
    await registry.retire('users');
    await expect(allocator.reserve('users', 10)).rejects.toBeInstanceOf(NotFoundError);
    expect(await allocator.reserve('edge', 100)).toEqual({ start: 2n ** 63n - 150n, end: 2n ** 63n - 50n });
    await expect(allocator.reserve('edge', 100)).rejects.toThrow(/used up its 63-bit number line/);
    expect(await allocator.peek('edge')).toBe(2n ** 63n - 50n);
  });
});

describeWithServices('a service whose PostgreSQL server dies or freezes (a private server)', { postgres: true }, () => {
  let server: PostgresServer;
  let instance: Instance;
  let secret: string;
  const key = 'orders';

  beforeAll(async () => {
    server = await startPostgresServer();
    // In-process pool: what the service still holds is all it can serve while the database is gone.
    instance = await startInstance({ IDPOOL_DATABASE_URL: server.url('idpool'), IDPOOL_REDIS_URL: '' });
    secret = await register(instance.url, {
      key,
      step: 100,
      maxPoolSize: 1000,
      maxSizePerSecond: 0,
      maxSizePerTimes: 100,
    });
  });

  afterAll(async () => {
    await instance?.stop();
    await server?.stop();
  });

  /** Clients taking batches of 10 until `stop()`: every answer's status, Retry-After and time. */
  function load(clients: number) {
    let running = true;
    const answers: { status: number; retryAfter: number; ms: number; at: number }[] = [];
    const ids: string[] = [];
    const done = Promise.all(
      Array.from({ length: clients }, async () => {
        while (running) {
          const t0 = Date.now();
          const res = await takeIds(instance.url, key, secret, 10);
          answers.push({
            status: res.status,
            retryAfter: Number(res.headers.get('retry-after')),
            ms: Date.now() - t0,
            at: t0,
          });
          if (res.status === 200) ids.push(...res.body.ids);
          else await new Promise((r) => setTimeout(r, 50));
        }
      }),
    );
    return {
      answers,
      ids,
      stop: async () => {
        running = false;
        await done;
      },
    };
  }

  const waitForIds = async () => {
    const deadline = Date.now() + 30_000;
    while ((await takeIds(instance.url, key, secret, 10)).status !== 200) {
      if (Date.now() > deadline)
        throw new Error(`no ids 30 s after the database came back:\n${instance.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  it('kill -9 mid-load: ids from the pool, then 503 with Retry-After (never a 500 or a hang); after a restart it serves again, repeating nothing', async () => {
    const run = load(4);
    let killedAt = 0;
    try {
      await new Promise((r) => setTimeout(r, 1500));
      killedAt = Date.now();
      await server.kill9();
      await new Promise((r) => setTimeout(r, 4000));
      const admin = await call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
      expect(admin.status).toBe(503);
      expect(admin.body.error.code).toBe('unavailable');
      // Anyone who reaches the port reads this: no driver text, host or port; those are in the log.
      expect(admin.body.error.message).not.toMatch(/ECONN|terminat|127\.0\.0\.1|localhost|:\d{2,5}\b/i);
      expect(admin.body.error.message).not.toContain(String(server.port));
      expect(instance.output()).toMatch(
        /"level":(40|50)[^\n]*(ECONNREFUSED|Connection terminated|terminating connection)/,
      );
      await server.restart();
      await waitForIds();
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await run.stop();
    }

    expect(instance.proc.exitCode).toBeNull();
    expect(new Set(run.answers.map((a) => a.status))).toEqual(new Set([200, 503]));
    for (const a of run.answers.filter((x) => x.status === 503)) expect(a.retryAfter).toBeGreaterThanOrEqual(1);
    expect(Math.max(...run.answers.map((a) => a.ms))).toBeLessThan(10_000);
    expect(run.answers.some((a) => a.status === 503 && a.at > killedAt)).toBe(true);
    expect(run.ids.length).toBeGreaterThan(1000); // more than one pool's worth: refills before and after the crash
    expect(new Set(run.ids).size).toBe(run.ids.length);
  });

  it('frozen (SIGSTOP): requests and admin reads answer 503 within the query timeout, never hang; it serves again after SIGCONT', async () => {
    const run = load(4);
    try {
      await new Promise((r) => setTimeout(r, 1000));
      server.pause();
      try {
        const t0 = Date.now();
        const admin = await call(`${instance.url}/admin/apps/${key}`, { token: ADMIN_TOKEN });
        const waited = Date.now() - t0;
        expect(admin.status).toBe(503);
        expect(Number(admin.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(waited).toBeLessThan(POSTGRES_STATEMENT_TIMEOUT_MS + 8000); // query_timeout is a second over; generous for the loaded machine
        await new Promise((r) => setTimeout(r, 2000));
      } finally {
        server.resume();
      }
      await waitForIds();
    } finally {
      await run.stop();
    }
    expect(instance.proc.exitCode).toBeNull();
    expect(new Set(run.answers.map((a) => a.status))).toEqual(new Set([200, 503]));
    expect(Math.max(...run.answers.map((a) => a.ms))).toBeLessThan(POSTGRES_STATEMENT_TIMEOUT_MS + 8000);
    expect(new Set(run.ids).size).toBe(run.ids.length);
  });
});
