import mysql2 from 'mysql2';

/**
 * Longest one SQL statement may take, counted from when it is handed to its
 * connection (queueing behind another statement included). A reservation is
 * one indexed UPDATE of one row (~1 ms here); 3 s is far above that, and a
 * heartbeat (every 3 s, 15 s TTL) still gets several tries before its lease
 * lapses.
 */
export const SQL_STATEMENT_TIMEOUT_MS = 3000;

/**
 * Statements that carry their own bound or only run at start-up: GET_LOCK
 * (the migration lock waits up to 60 s by design) and DDL in migrations.
 */
const UNBOUNDED = /^\s*(CREATE|ALTER|DROP|RENAME)\b|\bGET_LOCK\(/i;

type Callback = (err: Error | null, ...rest: unknown[]) => void;
type QueryFn = (sql: unknown, values?: unknown, cb?: Callback) => unknown;

/**
 * mysql2 with a statement timeout that frees the connection.
 *
 * mysql2's own per-query `timeout` (what TypeORM's `enableQueryTimeout`
 * sets) starts only when the statement starts, so one queued behind a hung
 * statement waits forever; and the timed-out connection goes back to the
 * pool still waiting for its answer, so the next statement on it hangs too.
 * A SIGSTOPped server or a half-open TCP connection (the database moved to
 * another address) would hold refills and heartbeats for the kernel's TCP
 * timeout. Here the timer starts when the statement is queued, and on expiry
 * the caller gets an error at once and the connection is destroyed (out of
 * the pool). A statement that timed out may still have run; the callers are
 * built for that (a reservation that committed unseen only wastes ids).
 */
export function boundedMysqlDriver(statementTimeoutMs = SQL_STATEMENT_TIMEOUT_MS): typeof mysql2 {
  const driver = Object.create(mysql2) as typeof mysql2;
  driver.createPool = ((options: mysql2.PoolOptions) => {
    const pool = mysql2.createPool(options);
    pool.on('connection', (connection) =>
      boundQueries(connection as unknown as { query: QueryFn; destroy(): void }, statementTimeoutMs),
    );
    return pool;
  }) as typeof mysql2.createPool;
  return driver;
}

function boundQueries(connection: { query: QueryFn; destroy(): void }, timeoutMs: number): void {
  const query = connection.query;
  connection.query = function (this: unknown, sql: unknown, values?: unknown, cb?: Callback) {
    if (typeof values === 'function') {
      cb = values as Callback;
      values = undefined;
    }
    const text = typeof sql === 'string' ? sql : ((sql as { sql?: string } | null)?.sql ?? '');
    if (typeof cb !== 'function' || UNBOUNDED.test(text)) return query.call(this, sql, values, cb);
    const callback = cb;
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      connection.destroy();
      callback(
        Object.assign(new Error(`statement timed out after ${timeoutMs} ms; its connection was dropped`), {
          code: 'PROTOCOL_SEQUENCE_TIMEOUT',
          fatal: true,
        }),
      );
    }, timeoutMs);
    return query.call(this, sql, values, (err, ...rest) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      callback(err, ...rest);
    });
  };
}
