import pg from 'pg';

/** node-postgres's message when `query_timeout` expires. */
const READ_TIMEOUT = /^Query read timeout$/;

type Callback = (err: Error | null, ...rest: unknown[]) => void;
type QueryFn = (...args: unknown[]) => unknown;
interface QueryableClient {
  query: QueryFn;
  end(): Promise<void>;
}

/**
 * node-postgres whose timed-out connections leave the pool.
 *
 * On `query_timeout` node-postgres fails the caller but keeps the
 * connection, the statement still waiting for its answer; the pool hands
 * that connection out again and the next statement queues behind it. Over a
 * half-open TCP connection (a network cut) every such connection stays
 * stuck until the kernel gives up on it, and after the heal each one holds
 * its next statement until its lost answer is retransmitted. Here a timeout
 * ends the client (`end()` marks it ending at once and destroys a socket
 * with a statement still on it), so the pool drops it on release and opens
 * a fresh one (as db/mysql-driver.ts does for MySQL).
 */
export function boundedPostgresDriver(): typeof pg {
  class Pool extends pg.Pool {
    constructor(options?: pg.PoolConfig) {
      super(options);
      this.on('connect', (client) => dropOnTimeout(client as unknown as QueryableClient));
    }
  }
  return Object.assign(Object.create(pg) as typeof pg, { Pool });
}

function dropOnTimeout(client: QueryableClient): void {
  const query = client.query;
  const drop = (err: unknown) => {
    // Runs before the caller sees the error, so before it releases the client.
    if (READ_TIMEOUT.test(String((err as Error | undefined)?.message))) client.end().catch(() => undefined);
  };
  client.query = function (this: unknown, ...args: unknown[]) {
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const callback = args[last] as Callback;
      args[last] = (err: Error | null, ...rest: unknown[]) => {
        if (err) drop(err);
        callback(err, ...rest);
      };
    }
    const result = query.apply(this, args);
    if (result instanceof Promise) result.catch(drop);
    return result;
  };
}
