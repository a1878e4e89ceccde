import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { dataSourceOptions, isPostgresUrl, postgresUnavailable, toPostgresPlaceholders } from '../../src/db/database';
import { UnavailableError } from '../../src/errors';

describe('PostgreSQL dialect', () => {
  it('rewrites ? placeholders to $n, leaving quoted strings and identifiers alone', () => {
    expect(toPostgresPlaceholders('UPDATE a SET x = x + ? WHERE k = ? AND d = 0')).toBe(
      'UPDATE a SET x = x + $1 WHERE k = $2 AND d = 0',
    );
    expect(toPostgresPlaceholders(`INSERT INTO w VALUES (?, '', 0, ?), (?, 'it''s ?', ?)`)).toBe(
      `INSERT INTO w VALUES ($1, '', 0, $2), ($3, 'it''s ?', $4)`,
    );
    expect(toPostgresPlaceholders('SELECT "odd?name" FROM t WHERE a = ?')).toBe(
      'SELECT "odd?name" FROM t WHERE a = $1',
    );
    expect(toPostgresPlaceholders('SELECT 1')).toBe('SELECT 1');
  });

  it('accepts postgres:// and postgresql:// URLs and gives the pg driver bounded waits and keep-alive', () => {
    for (const url of ['postgres://u:p@db:5432/ids', 'postgresql://u@db/ids']) {
      expect(isPostgresUrl(url)).toBe(true);
      expect(loadConfig({ IDPOOL_DATABASE_URL: url }).databaseUrl).toBe(url);
      const opts = dataSourceOptions(url) as { type: string; extra: Record<string, unknown> };
      expect(opts.type).toBe('postgres');
      expect(opts.extra).toMatchObject({
        keepAlive: true,
        statement_timeout: expect.any(Number),
        query_timeout: expect.any(Number),
      });
      expect(opts.extra.query_timeout as number).toBeGreaterThan(opts.extra.statement_timeout as number);
    }
    expect(isPostgresUrl('mysql://db/ids')).toBe(false);
    expect(() => loadConfig({ IDPOOL_DATABASE_URL: 'postgre://db/ids' })).toThrow(
      /IDPOOL_DATABASE_URL.*postgres:\/\/user:pass@host:5432\/db/,
    );
  });

  it('turns timeouts and lost connections into UnavailableError by SQLSTATE, passes real SQL errors through', () => {
    const pgError = (code: string, message: string) =>
      Object.assign(new pg.DatabaseError(message, 0, 'error'), { code });
    const timeout = postgresUnavailable(pgError('57014', 'canceling statement due to statement timeout'));
    expect(timeout).toBeInstanceOf(UnavailableError);
    expect((timeout as UnavailableError).retryAfterSeconds).toBe(1);
    expect(
      postgresUnavailable({ driverError: pgError('57P01', 'terminating connection due to administrator command') }),
    ).toBeInstanceOf(UnavailableError);
    expect(postgresUnavailable(pgError('08006', 'connection failure'))).toBeInstanceOf(UnavailableError);
    expect(postgresUnavailable(pgError('25006', 'cannot execute UPDATE in a read-only transaction'))).toBeInstanceOf(
      UnavailableError,
    );
    // node-postgres's own failures carry no code: only those db/postgres-driver.ts marked count (failure-classes.test.ts).
    const unmarked = new Error('Connection terminated unexpectedly');
    expect(postgresUnavailable(unmarked)).toBe(unmarked);
    const overflow = pgError('22003', 'bigint out of range');
    expect(postgresUnavailable(overflow)).toBe(overflow);
    const duplicate = pgError('23505', 'duplicate key value violates unique constraint');
    expect(postgresUnavailable(duplicate)).toBe(duplicate);
  });
});
