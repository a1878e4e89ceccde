import mysql2 from 'mysql2';

/**
 * Longest one statement may take, queueing on its connection included: far above a reservation (~1 ms), and a
 * heartbeat (every 3 s, 15 s TTL) still gets several tries before its lease lapses.
 */
export const SQL_STATEMENT_TIMEOUT_MS = 3000;

/** Statements with a bound of their own or run at start-up only: GET_LOCK (the migration lock's 60 s) and DDL. */
const UNBOUNDED = /^\s*(CREATE|ALTER|DROP|RENAME)\b|\bGET_LOCK\(/i;

type Callback = (err: Error | null, ...rest: unknown[]) => void;
type QueryFn = (sql: unknown, values?: unknown, cb?: Callback) => unknown;

/**
 * mysql2 with a statement timeout that frees the connection. mysql2's own `timeout` starts with the statement,
 * so one queued behind a hung statement waits forever, and the connection goes back to the pool still waiting:
 * a SIGSTOPped server or a half-open connection held refills for the kernel's TCP timeout. Here the timer
 * starts at queueing and its expiry destroys the connection. A timed-out statement may still have run (a
 * reservation committed unseen only wastes ids).
 */
export function boundedMysqlDriver(): typeof mysql2 {
  const driver = Object.create(mysql2) as typeof mysql2;
  driver.createPool = ((options: mysql2.PoolOptions) => {
    const pool = mysql2.createPool(options);
    pool.on('connection', (connection) => boundQueries(connection as unknown as { query: QueryFn; destroy(): void }));
    return pool;
  }) as typeof mysql2.createPool;
  return driver;
}

function boundQueries(connection: { query: QueryFn; destroy(): void }): void {
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
      const message = `statement timed out after ${SQL_STATEMENT_TIMEOUT_MS} ms; its connection was dropped`;
      callback(Object.assign(new Error(message), { code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true }));
    }, SQL_STATEMENT_TIMEOUT_MS);
    return query.call(this, sql, values, (err, ...rest) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      callback(err, ...rest);
    });
  };
}
