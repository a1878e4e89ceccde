/**
 * Reservations from an incumbent's own table during a live cutover (docs/migrating.md "Live cutover"):
 * idpool moves Leaf's `leaf_alloc` or Tinyid's `tiny_id_info` row as one more of its servers would, so the
 * row orders every allocation of both systems; `live-allocator.ts` turns the ids into numbers of the line.
 */
import { createPool, type Pool as MysqlPool, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { Pool as PgPool } from 'pg';
import { isPostgresUrl, toPostgresPlaceholders } from '../db/database';
import { UnavailableError, errorMessage } from '../errors';

export type IncumbentKind = 'leaf' | 'tinyid';

/** Ids reserved from an incumbent's row, as that service hands them out. */
export interface IncumbentSegment {
  /** Leaf: ids `[low, high)`; Tinyid: ids in `(low, high]` that are ≡ remainder (mod delta). */
  readonly low: bigint;
  readonly high: bigint;
}

/** One incumbent's database, as a live entity's reservations use it. */
export interface IncumbentDatabase {
  readonly kind: IncumbentKind;
  /** Moves the row `key` on by `size` numbers in one committed transaction (Tinyid's retried while another server wins). */
  reserve(key: string, size: number, spacing: { delta: number; remainder: number }): Promise<IncumbentSegment>;
  /** `SELECT 1` (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** How long a connection or a statement of the incumbent's database may take before the reservation fails as unavailable. */
const INCUMBENT_TIMEOUT_MS = 3000;
/** Tinyid's own servers retry its version-checked update 3 times; idpool, sharing the row with all of them, a few more. */
const TINYID_ATTEMPTS = 10;
/** Retry-After of a reservation that failed on the incumbent's database: as the service's own database's. */
const RETRY_AFTER_S = 2;

/** A pooled connection held for one transaction, on either driver. */
interface Session {
  query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  execute(sql: string, params: unknown[]): Promise<number>;
  /** Back to the pool; after a failure dropped rather than reused half way through a transaction. */
  release(failed: boolean): void;
}

interface Sessions extends Pick<IncumbentDatabase, 'ping' | 'close'> {
  readonly begin: 'START TRANSACTION' | 'BEGIN';
  connect(): Promise<Session>;
}

/** The incumbent's database at `url` (mysql://, mariadb://, postgres://). */
export function incumbentDatabase(kind: IncumbentKind, url: string): IncumbentDatabase {
  const postgres = isPostgresUrl(url);
  const sessions = postgres ? pgSessions(url) : mysqlSessions(url);
  const text = postgres ? 'VARCHAR(20)' : 'CHAR(20)';
  return {
    kind,
    reserve: async (key, size, spacing) => {
      try {
        if (kind === 'leaf') return await inTransaction(sessions, (s) => reserveLeaf(s, text, key, size));
        // Each attempt its own transaction: under MySQL's REPEATABLE READ a second read in the same one
        // would see the snapshot of the first, so every retry after a lost race would lose again.
        for (let attempt = 0; attempt < TINYID_ATTEMPTS; attempt++) {
          const won = await inTransaction(sessions, (s) => reserveTinyid(s, text, key, size, spacing));
          if (won) return won;
        }
        throw new UnavailableError(`Tinyid's row "${key}" changed under every one of ${TINYID_ATTEMPTS} attempts`, 1);
      } catch (err) {
        if (err instanceof UnavailableError) throw err;
        throw new UnavailableError(
          `the ${kind === 'leaf' ? 'Leaf' : 'Tinyid'} database this entity still reserves from (a live cutover) is unavailable`,
          RETRY_AFTER_S,
          errorMessage(err),
        );
      }
    },
    ping: () => sessions.ping(),
    close: () => sessions.close(),
  };
}

/** Leaf's `updateMaxIdByCustomStepAndGetLeafAlloc`: the update, then the row read back, in one transaction. */
async function reserveLeaf(s: Session, text: string, key: string, size: number): Promise<IncumbentSegment> {
  const changed = await s.execute('UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?', [size, key]);
  if (changed !== 1) throw new UnavailableError(`Leaf's leaf_alloc has no row "${key}"`, 60);
  const [row] = await s.query(`SELECT CAST(max_id AS ${text}) AS max_id FROM leaf_alloc WHERE biz_tag = ?`, [key]);
  const high = BigInt(String(row.max_id));
  return { low: high - BigInt(size), high };
}

/** One attempt of Tinyid's `updateMaxId`, version-checked: undefined when another server got there first. */
async function reserveTinyid(
  s: Session,
  text: string,
  key: string,
  size: number,
  spacing: { delta: number; remainder: number },
): Promise<IncumbentSegment | undefined> {
  const row = (
    await s.query(
      `SELECT id, CAST(max_id AS ${text}) AS max_id, delta, remainder, version FROM tiny_id_info WHERE biz_type = ?`,
      [key],
    )
  ).at(0);
  if (!row) throw new UnavailableError(`Tinyid's tiny_id_info has no row "${key}"`, 60);
  if (Number(row.delta) !== spacing.delta || Number(row.remainder) !== spacing.remainder)
    throw new UnavailableError(
      `Tinyid's row "${key}" now has delta ${String(row.delta)} remainder ${String(row.remainder)}, the entity ${spacing.delta} and ${spacing.remainder}: its ids would not be the entity's`,
      60,
    );
  const low = BigInt(String(row.max_id));
  const high = low + BigInt(size) * BigInt(spacing.delta);
  const changed = await s.execute(
    'UPDATE tiny_id_info SET max_id = ?, update_time = CURRENT_TIMESTAMP, version = version + 1 WHERE id = ? AND max_id = ? AND version = ? AND biz_type = ?',
    [high.toString(), row.id, low.toString(), row.version, key],
  );
  return changed === 1 ? { low, high } : undefined;
}

async function inTransaction<T>(sessions: Sessions, work: (s: Session) => Promise<T>): Promise<T> {
  const c = await sessions.connect();
  let done = false;
  try {
    await c.execute(sessions.begin, []);
    const result = await work(c);
    await c.execute('COMMIT', []);
    done = true;
    return result;
  } finally {
    c.release(!done);
  }
}

function mysqlSessions(url: string): Sessions {
  const pool: MysqlPool = createPool({
    uri: url.replace(/^mariadb:/, 'mysql:'),
    supportBigNumbers: true,
    bigNumberStrings: true,
    connectTimeout: INCUMBENT_TIMEOUT_MS,
    connectionLimit: 4,
  });
  // Every statement bounded, START TRANSACTION and COMMIT too: beginTransaction() and commit() have no
  // timeout, and a frozen server would hold the reservation (and the request) until it thaws.
  const timeout = INCUMBENT_TIMEOUT_MS;
  return {
    begin: 'START TRANSACTION',
    async connect() {
      const c = await pool.getConnection();
      return {
        query: async (sql, values) => (await c.query<RowDataPacket[]>({ sql, values, timeout }))[0],
        execute: async (sql, values) => (await c.query<ResultSetHeader>({ sql, values, timeout }))[0].affectedRows,
        release: (failed) => (failed ? c.destroy() : c.release()),
      };
    },
    async ping() {
      await pool.query({ sql: 'SELECT 1', timeout });
    },
    close: () => pool.end(),
  };
}

function pgSessions(url: string): Sessions {
  const pool = new PgPool({
    connectionString: url,
    connectionTimeoutMillis: INCUMBENT_TIMEOUT_MS,
    statement_timeout: INCUMBENT_TIMEOUT_MS,
    // statement_timeout is the server's: a frozen or cut-off server never applies it, this one the client does.
    query_timeout: INCUMBENT_TIMEOUT_MS,
    max: 4,
  });
  // A client's error (the server went away) must not end the process: an idle one's reaches the pool, one
  // checked out for a transaction (its query then fails, which the reservation answers as a 503) only itself.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return {
    begin: 'BEGIN',
    async connect() {
      const c = await pool.connect();
      return {
        query: async (sql, params) =>
          (await c.query(toPostgresPlaceholders(sql), params)).rows as Record<string, unknown>[],
        execute: async (sql, params) => (await c.query(toPostgresPlaceholders(sql), params)).rowCount ?? 0,
        release: (failed) => c.release(failed),
      };
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    close: () => pool.end(),
  };
}
