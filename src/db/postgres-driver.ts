import pg from 'pg';
import type { Clock } from '../clock';

/** Marks node-postgres's own failures, which carry no code, for db/errors/postgres.ts. */
const CLIENT_FAILURE = Symbol('idpool.pgClientFailure');
type ClientFailure = 'timeout' | 'lost';

/** How node-postgres failed, if `err` is one of its own failures marked here. */
export function pgClientFailure(err: object): ClientFailure | undefined {
  return (err as { [CLIENT_FAILURE]?: ClientFailure })[CLIENT_FAILURE];
}

/** Marks a failure node-postgres raised itself: not a server's `DatabaseError`, nor a programming error. */
function mark(err: unknown, failure: ClientFailure): void {
  const own = err instanceof Error && ![pg.DatabaseError, TypeError, RangeError].some((type) => err instanceof type);
  if (own) Object.defineProperty(err, CLIENT_FAILURE, { value: failure, configurable: true });
}

type Callback = (err: Error | null, ...rest: unknown[]) => void;
type ConnectCallback = Parameters<pg.Pool['connect']>[0];
interface QueryableClient {
  query: (...args: unknown[]) => unknown;
  end(): Promise<void>;
  on(event: 'error' | 'end', listener: () => void): void;
}

/**
 * node-postgres whose timed-out connections leave the pool. On `query_timeout` it keeps the connection, its
 * statement still waiting, and hands it out again: over a half-open connection each stays stuck until the
 * kernel gives up. Here a timeout ends the client, so the pool drops it on release (as db/mysql-driver.ts).
 */
export function boundedPostgresDriver(clock: Pick<Clock, 'monotonic'>): typeof pg {
  class Pool extends pg.Pool {
    constructor(options?: pg.PoolConfig) {
      super(options);
      const queryTimeoutMs = options?.query_timeout ?? Infinity;
      this.on('connect', (client) => dropOnTimeout(client as unknown as QueryableClient, queryTimeoutMs, clock));
    }

    // Every failure to connect node-postgres raises itself is the server being unavailable.
    override connect(): Promise<pg.PoolClient>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
      const started = clock.monotonic();
      // 0: no connection timeout of its own.
      const limit = this.options.connectionTimeoutMillis ?? 0;
      const marked = (err: unknown) =>
        mark(err, limit > 0 && clock.monotonic() - started >= limit - 1 ? 'timeout' : 'lost');
      if (!callback)
        return super.connect().catch((err: unknown) => {
          marked(err);
          throw err;
        });
      super.connect((err, client, done) => {
        if (err) marked(err);
        callback(err, client, done);
      });
    }
  }
  return Object.assign(Object.create(pg) as typeof pg, { Pool });
}

function dropOnTimeout(client: QueryableClient, queryTimeoutMs: number, clock: Pick<Clock, 'monotonic'>): void {
  const query = client.query;
  let ended = false;
  // node-postgres emits 'error' before it fails the statements on a connection that broke.
  client.on('error', () => (ended = true));
  client.on('end', () => (ended = true));
  const failed = (err: unknown, started: number) => {
    if (ended) {
      mark(err, 'lost');
      return;
    }
    // No answer within query_timeout: node-postgres gave up reading.
    if (clock.monotonic() - started < queryTimeoutMs - 1) return;
    mark(err, 'timeout');
    if (!pgClientFailure(err as object)) return;
    // Runs before the caller sees the error, so before it releases the client.
    ended = true;
    client.end().catch(() => undefined);
  };
  client.query = function (this: unknown, ...args: unknown[]) {
    const started = clock.monotonic();
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const callback = args[last] as Callback;
      args[last] = (err: Error | null, ...rest: unknown[]) => {
        if (err) failed(err, started);
        callback(err, ...rest);
      };
    }
    const result = query.apply(this, args);
    if (result instanceof Promise) result.catch((err: unknown) => failed(err, started));
    return result;
  };
}
