import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock';
import { type Database, isBusy, openDatabase } from '../../src/db/database';
import { SqlEntityStore } from '../../src/entities/entity-store';
import { EntityRegistry } from '../../src/entities/registry';
import { UnavailableError } from '../../src/errors';
import { dependencyFailure } from '../../src/http/dependency-failure';
import { SqlSegmentAllocator } from '../../src/segment/allocator';
import { checkStride } from '../../src/segment/stride-record';
import { expectFailure, rejection } from '../support/failures';

/** SQLite failures provoked for real on files of the test's own, through idpool's Database where idpool meets them. */
describe('SQLite failures, provoked and classified', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-sqlite-failures-'));
  const path = join(dir, 'idpool.db');
  let db: Database;

  beforeAll(async () => {
    db = await openDatabase(`sqlite:${path}`);
    await db.query('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)');
    await db.query('INSERT INTO t VALUES (1, 0)');
  });

  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('another process holding the write lock past busy_timeout: SQLITE_BUSY → busy/lock_timeout, 503', async () => {
    const other = new BetterSqlite(path);
    try {
      other.exec('BEGIN IMMEDIATE');
      const err = await rejection(db.query('UPDATE t SET v = v + 1 WHERE id = 1'));
      expectFailure(err, { class: 'busy', kind: 'lock_timeout' });
      expect(isBusy(err)).toBe(true);
      expect(dependencyFailure(err)).toBe('lock_timeout');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  });

  it('a file opened read-only: SQLITE_READONLY → unavailable/read_only; a file it cannot open: SQLITE_CANTOPEN → unavailable', () => {
    const readonly = new BetterSqlite(path, { readonly: true });
    try {
      expectFailure(
        catching(() => readonly.exec('UPDATE t SET v = 1')),
        { class: 'unavailable', kind: 'read_only' },
      );
    } finally {
      readonly.close();
    }
    // A directory where the file should be.
    expectFailure(
      catching(() => new BetterSqlite(dir)),
      { class: 'unavailable', kind: 'disk' },
    );
  });

  it('data refused: a duplicate key → conflict, a stranger table missing → bug (no 503), one of idpool tables → 503; the stride check asks the schema', async () => {
    const duplicate = await rejection(db.query('INSERT INTO t VALUES (1, 0)'));
    expectFailure(duplicate, { class: 'conflict', kind: 'duplicate' });
    const missing = await rejection(db.query('SELECT * FROM no_such_table'));
    expectFailure(missing, { class: 'bug' });
    for (const err of [duplicate, missing]) expect(dependencyFailure(err)).toBeUndefined();
    // One of idpool's own tables gone (a restore under way): the dialect asks the schema, and it is a 503.
    const restoring = await openDatabase(`sqlite:${join(dir, 'restoring.db')}`);
    try {
      await restoring.query('ALTER TABLE application RENAME TO application_restoring');
      const gone = await rejection(restoring.query('SELECT * FROM application'));
      expectFailure(gone, { class: 'unavailable', kind: 'database_schema' });
      expect(dependencyFailure(gone)).toBe('database_schema');
    } finally {
      await restoring.close();
    }
    // SQLite gives a missing table no code of its own: checkStride asks the schema before saying what to do.
    const bare = await openDatabase(`sqlite:${join(dir, 'bare.db')}`, { migrate: false });
    try {
      await expect(checkStride(bare, 1, 0, Date.now())).rejects.toThrow(/has no idpool_meta table/);
    } finally {
      await bare.close();
    }
  });

  it('offsets above 2^53 stay exact; the reservation that would pass 2^63 is refused with 503, the offset unchanged', async () => {
    const registry = new EntityRegistry(new SqlEntityStore(db), systemClock);
    const allocator = new SqlSegmentAllocator(db);
    // better-sqlite3 binds a number as a REAL: an addition in floating point rounded 2^53 + 1 + 100 to … + 100 - 1.
    await registry.register({ key: 'above53', mode: 'monotonic', startOffset: 2n ** 53n + 1n });
    expect(await allocator.reserve('above53', 100)).toEqual({ start: 2n ** 53n + 1n, end: 2n ** 53n + 101n });
    expect(await allocator.reserve('above53', 3)).toEqual({ start: 2n ** 53n + 101n, end: 2n ** 53n + 104n });
    await registry.register({ key: 'edge', mode: 'monotonic', startOffset: 2n ** 63n - 150n });
    expect(await allocator.reserve('edge', 100)).toEqual({ start: 2n ** 63n - 150n, end: 2n ** 63n - 50n });
    const err = await rejection(allocator.reserve('edge', 100));
    expect(err).toBeInstanceOf(UnavailableError);
    expect(String(err)).toMatch(/used up its 63-bit number line/);
    expect(await allocator.peek('edge')).toBe(2n ** 63n - 50n);
  });
});

function catching(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}
