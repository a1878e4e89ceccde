import type { QueryRunner } from 'typeorm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/database';
import { dependencyFailure } from '../../src/http/dependency-failure';
import { expectFailure, rejection } from './failures';
import { freePort } from './processes';

/** A private SQL server a failure suite may freeze or kill. */
interface PrivateServer {
  readonly port: number;
}

/**
 * What the MariaDB and PostgreSQL failure suites (failure-classes-*.test.ts)
 * share: a private server, idpool's own Database on it with a table `t`
 * (ids 1 and 2, the second 7 below BIGINT's top), sessions of their own,
 * and the failures both dialects provoke alike. Made inside a `describe`:
 * its hooks start the server before the tests and stop it after them.
 */
export class SqlFailureSuite<S extends PrivateServer> {
  server!: S;
  db!: Database;
  private readonly opened: Database[] = [];

  constructor(
    private readonly dialect: {
      start(): Promise<S>;
      stop(server: S): Promise<void>;
      /** idpool's URL of the `idpool` database on a server at `port`. */
      url(port: number): string;
      /** After `CREATE TABLE t (…)`: MariaDB's engine. */
      tableOptions?: string;
    },
  ) {
    beforeAll(async () => {
      this.server = await dialect.start();
      this.db = await this.open(dialect.url(this.server.port));
      await this.db.query(`CREATE TABLE t (id INT PRIMARY KEY, big BIGINT NOT NULL)${dialect.tableOptions ?? ''}`);
      await this.db.query('INSERT INTO t VALUES (1, 0), (2, 9223372036854775800)');
    }, 60_000);
    afterAll(async () => {
      await Promise.all(this.opened.map((d) => d.close().catch(() => undefined)));
      if (this.server) await dialect.stop(this.server);
    });
  }

  /** Another Database, closed after the suite. */
  async open(url: string, options?: Parameters<typeof openDatabase>[1]): Promise<Database> {
    const db = await openDatabase(url, options);
    this.opened.push(db);
    return db;
  }

  /** One connection of its own (a TypeORM query runner), for transactions that hold locks. */
  async session(): Promise<QueryRunner> {
    const runner = this.db.dataSource.createQueryRunner();
    await runner.connect();
    return runner;
  }

  /** A connection to a port nothing listens on: ECONNREFUSED → unavailable/refused. */
  refusedConnection(): void {
    it('a refused connection: ECONNREFUSED → unavailable/refused', async () => {
      const port = await freePort();
      expectFailure(await rejection(openDatabase(this.dialect.url(port))), { class: 'unavailable', kind: 'refused' });
    });
  }

  /** Two transactions waiting on each other's row: the server's deadlock error (`code`) → busy/deadlock. */
  deadlock(code: string): void {
    it(`two transactions waiting on each other: ${code} → busy/deadlock`, async () => {
      const [a, b] = await Promise.all([this.session(), this.session()]);
      try {
        await a.startTransaction();
        await b.startTransaction();
        await a.query('UPDATE t SET big = big WHERE id = 1');
        await b.query('UPDATE t SET big = big WHERE id = 2');
        const crossed = await Promise.allSettled([
          a.query('UPDATE t SET big = big WHERE id = 2'),
          b.query('UPDATE t SET big = big WHERE id = 1'),
        ]);
        const victim = crossed.find((r) => r.status === 'rejected');
        expectFailure(victim?.reason, { class: 'busy', kind: 'deadlock' });
      } finally {
        await a.rollbackTransaction().catch(() => undefined);
        await b.rollbackTransaction().catch(() => undefined);
        await Promise.all([a.release(), b.release()]);
      }
    });
  }

  /**
   * A session killed by another (`how` titles it; `kill` is the SQL that
   * ends the session `own` returns): → unavailable. The victim comes from a
   * Database of its own: its dead connection, released, must not be the one
   * the shared pool hands the next test before the pool has seen it end.
   */
  killedConnection(how: string, own: string, kill: string): void {
    it(`its connection killed (${how}): → unavailable`, async () => {
      const victims = await this.open(this.dialect.url(this.server.port), { migrate: false });
      const victim = victims.dataSource.createQueryRunner();
      await victim.connect();
      const killer = await this.session();
      try {
        const [{ id }] = (await victim.query(`${own} AS id`)) as { id: number }[];
        await killer.query(kill, [id]);
        expectFailure(await rejection(victim.query('SELECT 1')), { class: 'unavailable' });
      } finally {
        await Promise.all([victim.release().catch(() => undefined), killer.release()]);
        await victims.close().catch(() => undefined);
      }
    });
  }

  /**
   * Data the server refuses, through `through` (idpool's Database, as the
   * stores query, or a session): a duplicate key → conflict, BIGINT
   * overflow → invalid, a missing table → unavailable (a restore under way: 503).
   */
  refusedData(through: 'database' | 'session'): void {
    it('data the server refuses: duplicate key → conflict, BIGINT overflow → invalid, a missing table → unavailable (a restore under way: 503)', async () => {
      const runner = through === 'session' ? await this.session() : undefined;
      const query = (sql: string) => (runner ?? this.db).query(sql);
      try {
        const duplicate = await rejection(query('INSERT INTO t VALUES (1, 0)'));
        expectFailure(duplicate, { class: 'conflict', kind: 'duplicate' });
        const overflow = await rejection(query('UPDATE t SET big = big + 100 WHERE id = 2'));
        expectFailure(overflow, { class: 'invalid', kind: 'out_of_range' });
        const missing = await rejection(query('SELECT * FROM no_such_table'));
        expectFailure(missing, { class: 'unavailable', kind: 'database_schema' });
        expect(dependencyFailure(missing)).toBe('database_schema');
        for (const err of [duplicate, overflow]) expect(dependencyFailure(err)).toBeUndefined();
      } finally {
        await runner?.release();
      }
    });
  }
}
