import express from 'express';
import { describe, expect, it } from 'vitest';
import { dependencyFailure, errorHandler } from '../../src/http/errors';
import type { Logger } from '../../src/logger';
import type { ErrorAnswer } from '../helpers/http';

/** An ioredis ReplyError-like error: the server's reply is the message. */
const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

describe('dependency failure classifier', () => {
  it.each([
    ["READONLY You can't write against a read only replica.", 'redis_readonly'],
    ['LOADING Redis is loading the dataset in memory', 'redis_loading'],
    ["OOM command not allowed when used memory > 'maxmemory'.", 'redis_oom'],
    ['CLUSTERDOWN The cluster is down', 'redis_clusterdown'],
    ['TRYAGAIN Multiple keys request during rehashing of slot', 'redis_tryagain'],
    ['MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no.', 'redis_masterdown'],
    ['NOREPLICAS Not enough good replicas to write.', 'redis_noreplicas'],
    [
      'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.',
      'redis_misconf',
    ],
    ['BUSY Redis is busy running a script.', 'redis_busy'],
    ['Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down', 'redis_clusterdown'],
    [
      'Too many Cluster redirections. Last error: TRYAGAIN Multiple keys request during rehashing of slot',
      'redis_tryagain',
    ],
  ])('Redis reply %s → %s', (message, kind) => {
    expect(dependencyFailure(reply(message))).toBe(kind);
  });

  it.each([
    [Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' })],
    [
      Object.assign(new Error('Reached the max retries per request limit (which is 1).'), {
        name: 'MaxRetriesPerRequestError',
      }),
    ],
    [new Error('Connection is closed.')],
    [new Error('Command timed out')],
    [new Error('All sentinels are unreachable. Retrying from scratch after 10ms.')],
    [new Error('Too many Cluster redirections. Last error: Error: Connection is closed.')],
    [new Error("Cluster isn't ready and enableOfflineQueue options is false")],
    [new Error('None of startup nodes is available')],
    // TypeORM wraps the driver's error.
    [
      Object.assign(new Error('Query failed'), {
        driverError: Object.assign(new Error('Query inactivity timeout'), { code: 'PROTOCOL_SEQUENCE_TIMEOUT' }),
      }),
    ],
    [
      Object.assign(new Error('Connection lost: The server closed the connection.'), {
        code: 'PROTOCOL_CONNECTION_LOST',
      }),
    ],
    [Object.assign(new Error('Server shutdown in progress'), { code: 'ER_SERVER_SHUTDOWN' })],
    [Object.assign(new Error('wrapped'), { cause: Object.assign(new Error('x'), { code: 'ETIMEDOUT' }) })],
  ])('connection failure %#', (err) => {
    expect(dependencyFailure(err)).toBe('connection');
  });

  it.each([
    [new Error('ERR wrong number of arguments')],
    [new TypeError("Cannot read properties of undefined (reading 'x')")],
    [reply('WRONGTYPE Operation against a key holding the wrong kind of value')],
    [undefined],
    ['READONLY as a string'],
  ])('not a dependency failure: %s', (err) => {
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
    app.use(errorHandler(log, () => now));
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
