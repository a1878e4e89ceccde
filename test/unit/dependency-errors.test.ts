import express from 'express';
import { describe, expect, it } from 'vitest';
import BetterSqlite from 'better-sqlite3';
import { ReplyError } from 'ioredis';
import { MaxRetriesPerRequestError } from 'ioredis/built/errors';
import pg from 'pg';
import { QueryFailedError, QueryRunnerAlreadyReleasedError } from 'typeorm';
import { classifyMysqlError, classifyPostgresError, classifySqlError, classifySqliteError } from '../../src/db/errors';
import { classifyDependencyError, dependencyFailure } from '../../src/http/dependency-failure';
import { errorFaces, sendError } from '../../src/http/errors';
import { classifyRedisError } from '../../src/redis/errors';
import type { Logger } from '../../src/logger';
import type { ErrorAnswer } from '../support/http';

/** A reply as ioredis hands it over: a ReplyError whose message is the server's reply. */
const reply = (message: string): Error => new ReplyError(message) as Error;
/** A server error as mysql2 builds it: the server's number and SQLSTATE beside the text. */
const mysqlError = (errno: number, sqlState = 'HY000') =>
  Object.assign(new Error(`mysql error ${errno}`), { errno, sqlState, code: 'ER_WHATEVER', fatal: false });
const pgError = (code: string) => Object.assign(new pg.DatabaseError(`pg error ${code}`, 0, 'error'), { code });
const sqliteError = (code: string) => new BetterSqlite.SqliteError(`sqlite error ${code}`, code);
const wrappedByTypeorm = (driverError: Error) => new QueryFailedError('SELECT 1', [], driverError);

describe('the Redis classifier: the reply first word, ioredis classes', () => {
  it.each([
    ["READONLY You can't write against a read only replica.", 'unavailable', 'read_only', 'redis_readonly'],
    ['LOADING Redis is loading the dataset in memory', 'unavailable', 'loading', 'redis_loading'],
    ["OOM command not allowed when used memory > 'maxmemory'.", 'unavailable', 'out_of_memory', 'redis_oom'],
    ['CLUSTERDOWN The cluster is down', 'unavailable', 'cluster_down', 'redis_clusterdown'],
    ['TRYAGAIN Multiple keys request during rehashing of slot', 'busy', 'moved', 'redis_tryagain'],
    [
      'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no.',
      'unavailable',
      'no_master',
      'redis_masterdown',
    ],
    ['NOREPLICAS Not enough good replicas to write.', 'unavailable', 'read_only', 'redis_noreplicas'],
    ['MISCONF Redis is configured to save RDB snapshots', 'unavailable', 'disk', 'redis_misconf'],
    ['BUSY Redis is busy running a script.', 'busy', 'script_busy', 'redis_busy'],
    ['NOSCRIPT No matching script.', 'unavailable', 'missing_script', 'redis_noscript'],
    ['MOVED 3999 127.0.0.1:6381', 'unavailable', 'moved', 'redis_moved'],
    ['ASK 3999 127.0.0.1:6381', 'unavailable', 'moved', 'redis_ask'],
    ['NOPERM this user has no permissions', 'unavailable', 'auth', 'redis_noperm'],
  ])('%s → %s %s', (message, cls, kind, alarm) => {
    expect(classifyRedisError(reply(message))).toMatchObject({ class: cls, kind });
    expect(dependencyFailure(reply(message))).toBe(alarm);
  });

  it('follows what ioredis wraps: an EXECABORT its first refusal, a Cluster out of redirections its last reply', () => {
    const execAbort = Object.assign(reply('EXECABORT Transaction discarded'), { previousErrors: [reply('OOM full')] });
    expect(dependencyFailure(execAbort)).toBe('redis_oom');
    const gaveUp = Object.assign(new Error('Too many Cluster redirections. Last error: …'), {
      lastNodeError: reply('CLUSTERDOWN Hash slot not served'),
    });
    expect(dependencyFailure(gaveUp)).toBe('redis_clusterdown');
  });

  it('knows ioredis error classes by class, not text', () => {
    expect(classifyRedisError(new MaxRetriesPerRequestError(1))).toMatchObject({ class: 'unavailable', kind: 'lost' });
  });

  it('a reply that is idpool asking wrong is a bug, not a dependency failure', () => {
    expect(classifyRedisError(reply('ERR wrong number of arguments'))).toEqual({
      class: 'bug',
      kind: 'other',
      reply: 'ERR',
    });
    expect(
      classifyRedisError(reply('WRONGTYPE Operation against a key holding the wrong kind of value')),
    ).toMatchObject({
      class: 'bug',
    });
    expect(dependencyFailure(reply('WRONGTYPE Operation against a key'))).toBeUndefined();
    // A function no loaded library defines: still a bug to a caller, told apart for withLibrary.
    expect(classifyRedisError(reply('ERR Function not found'))).toEqual({
      class: 'bug',
      kind: 'missing_function',
      reply: 'ERR',
    });
  });
});

describe('the SQL classifiers: mysql2 errno, SQLSTATE, SQLite codes', () => {
  it.each([
    [mysqlError(1205), 'busy', 'lock_timeout'],
    [mysqlError(1213, '40001'), 'busy', 'deadlock'],
    [mysqlError(1412, 'HY000'), 'busy', 'deadlock'],
    [mysqlError(1290), 'unavailable', 'read_only'],
    [mysqlError(1836), 'unavailable', 'read_only'],
    [mysqlError(1053), 'unavailable', 'lost'],
    [mysqlError(1927), 'unavailable', 'lost'],
    [mysqlError(1969), 'busy', 'timeout'],
    [mysqlError(1040), 'busy', 'too_many_connections'],
    [mysqlError(1062, '23000'), 'conflict', 'duplicate'],
    [mysqlError(1690, '22003'), 'invalid', 'out_of_range'],
    [mysqlError(4025, '23000'), 'invalid', 'constraint'],
    [mysqlError(1146, '42S02'), 'unavailable', 'database_schema'],
    [mysqlError(1049, '42000'), 'unavailable', 'database_schema'],
    [mysqlError(1064, '42000'), 'bug', 'other'],
  ])('mysql2 errno %#', (err, cls, kind) => {
    expect(classifyMysqlError(err)).toEqual({ class: cls, kind });
    expect(classifySqlError(wrappedByTypeorm(err))).toEqual({ class: cls, kind });
  });

  it('mysql2 client failures: its codes, and `fatal` for a connection that closed under a statement', () => {
    const timeout = Object.assign(new Error('x'), { code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true });
    expect(classifySqlError(wrappedByTypeorm(timeout))).toEqual({ class: 'unavailable', kind: 'timeout' });
    expect(classifySqlError(Object.assign(new Error('x'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }))).toEqual({
      class: 'unavailable',
      kind: 'lost',
    });
    expect(classifySqlError(Object.assign(new Error('closed state'), { fatal: true }))).toEqual({
      class: 'unavailable',
      kind: 'lost',
    });
    expect(classifySqlError(Object.assign(new Error('x'), { code: 'ECONNREFUSED', fatal: true }))).toEqual({
      class: 'unavailable',
      kind: 'refused',
    });
  });

  it.each([
    ['40P01', 'busy', 'deadlock'],
    ['40001', 'busy', 'deadlock'],
    ['55P03', 'busy', 'lock_timeout'],
    ['57014', 'busy', 'timeout'],
    ['25006', 'unavailable', 'read_only'],
    ['57P01', 'unavailable', 'lost'],
    ['08006', 'unavailable', 'lost'],
    ['53300', 'busy', 'too_many_connections'],
    ['23505', 'conflict', 'duplicate'],
    ['22003', 'invalid', 'out_of_range'],
    ['23502', 'invalid', 'constraint'],
    ['42P01', 'unavailable', 'database_schema'],
    ['3D000', 'unavailable', 'database_schema'],
    ['42601', 'bug', 'other'],
  ])('PostgreSQL SQLSTATE %s → %s %s', (code, cls, kind) => {
    expect(classifyPostgresError(pgError(code))).toEqual({ class: cls, kind });
    expect(classifySqlError(wrappedByTypeorm(pgError(code)))).toEqual({ class: cls, kind });
  });

  // CI met it: a backend terminated while its runner was idle; TypeORM released the runner on the client's
  // `error` event before the next query, which then failed with TypeORM's own error instead of 57P01.
  it('a PostgreSQL runner TypeORM released because its connection failed: unavailable, lost', () => {
    expect(classifyPostgresError(new QueryRunnerAlreadyReleasedError())).toEqual({
      class: 'unavailable',
      kind: 'lost',
    });
  });

  // The chaos run restored a backup under load: a take meeting the window
  // where mysqldump's output had dropped `application` answered 500.
  it.each([
    [wrappedByTypeorm(mysqlError(1146, '42S02'))],
    [wrappedByTypeorm(mysqlError(1049, '42000'))],
    [wrappedByTypeorm(pgError('42P01'))],
    [pgError('3D000')],
  ])('database without its tables %#: database_schema', (err) => {
    expect(dependencyFailure(err)).toBe('database_schema');
  });

  it.each([
    ['SQLITE_BUSY', 'busy', 'lock_timeout'],
    ['SQLITE_BUSY_SNAPSHOT', 'busy', 'lock_timeout'],
    ['SQLITE_LOCKED', 'busy', 'lock_timeout'],
    ['SQLITE_CONSTRAINT_UNIQUE', 'conflict', 'duplicate'],
    ['SQLITE_CONSTRAINT_PRIMARYKEY', 'conflict', 'duplicate'],
    ['SQLITE_CONSTRAINT_NOTNULL', 'invalid', 'constraint'],
    ['SQLITE_READONLY_DBMOVED', 'unavailable', 'read_only'],
    ['SQLITE_IOERR_WRITE', 'unavailable', 'disk'],
    ['SQLITE_FULL', 'unavailable', 'disk'],
    ['SQLITE_ERROR', 'bug', 'other'],
  ])('SQLite %s → %s %s', (code, cls, kind) => {
    expect(classifySqliteError(sqliteError(code))).toEqual({ class: cls, kind });
    expect(classifySqlError(wrappedByTypeorm(sqliteError(code)))).toEqual({ class: cls, kind });
  });

  it('Node system codes, also under a cause', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' });
    expect(classifyDependencyError(refused)).toEqual({ class: 'unavailable', kind: 'refused' });
    expect(
      classifyDependencyError(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ETIMEDOUT' }) })),
    ).toEqual({ class: 'unavailable', kind: 'timeout' });
  });
});

describe('not a dependency failure', () => {
  it.each([
    [new Error('ERR wrong number of arguments')],
    // Text is not structure: ioredis's words on an error it did not raise mean nothing.
    [new Error('Connection is closed.')],
    [new Error('READONLY You cannot write against a read only replica.')],
    [new TypeError("Cannot read properties of undefined (reading 'x')")],
    [undefined],
    ['READONLY as a string'],
  ])('%s', (err) => {
    expect(dependencyFailure(err)).toBeUndefined();
  });
});

describe('error handler', () => {
  it('answers 503 unavailable with Retry-After and raises one alarm per kind per 10 s, not a line per request', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = {
      error: (obj: Record<string, unknown>) => lines.push(obj),
      warn: () => undefined,
      info: () => undefined,
      child: () => log,
    } as unknown as Logger;
    let now = 0;
    const app = express();
    app.get('/x', (_req, _res, next) => next(reply('OOM command not allowed')));
    app.use(errorFaces(log, { monotonic: () => now })(sendError));
    const server = app.listen(0);
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/x`;
    try {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(url);
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(((await res.json()) as ErrorAnswer).error.code).toBe('unavailable');
      }
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ alarm: 'dependency_unavailable', kind: 'redis_oom' });
      now = 10_001;
      await fetch(url);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatchObject({ requestsSinceLastAlarm: 5 });
      expect(JSON.stringify(lines)).not.toMatch(/\bat .*\.ts:\d+/); // no stack
    } finally {
      server.close();
    }
  });
});
