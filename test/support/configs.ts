import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import Redis from 'ioredis';
import { openDatabase, toPostgresPlaceholders } from '../../src/db/database';
import { REDIS_URL, type SqlServer, createTestSchema, testPrefix, sharedRedisEnv, clearPrefix } from './services';
import { entityKeyBase } from './keys';

/**
 * The store configurations every core HTTP test runs against: the
 * production shapes (MariaDB + Redis, PostgreSQL + Redis) and the embedded
 * default (SQLite file + in-process pool).
 */
export interface StoreSetup {
  readonly name: string;
  readonly needs: { mysql?: boolean; postgres?: boolean; redis?: boolean };
  readonly env: Record<string, string>;
  /** The prefix of its Redis keys (IDPOOL_REDIS_KEY_PREFIX), when it has Redis. */
  readonly redisPrefix?: string;
  /** Rows of `application`, for "nothing changed" checks. */
  applicationRows(): Promise<unknown[]>;
  /** Every Redis key of these entities with its value ({} without Redis). */
  redisState(entityKeys: string[]): Promise<Record<string, unknown>>;
  /** Blocks reservations (row lock / write lock) until the returned function is called. */
  stallDatabase(entityKey: string): Promise<() => Promise<void>>;
  /** Current offset of an entity straight from SQL. */
  currentOffset(entityKey: string): Promise<bigint>;
  cleanup(): Promise<void>;
}

export { uniqueKey } from './keys';

/** A SQL server (a schema or database of the test's own) + the shared Redis; SQL through idpool's own Database wrapper. */
async function serverRedisSetup(server: SqlServer): Promise<StoreSetup> {
  const schema = await createTestSchema(server);
  const db = await openDatabase(schema.url);
  const redis = new Redis(REDIS_URL);
  const prefix = testPrefix();
  const name = `${server}+redis`;
  return {
    name,
    needs: { [server]: true, redis: true },
    env: { IDPOOL_DATABASE_URL: schema.url, ...sharedRedisEnv(prefix) },
    redisPrefix: prefix,
    applicationRows: () => db.query('SELECT * FROM application ORDER BY id'),
    async redisState(keys) {
      const state: Record<string, unknown> = {};
      for (const key of keys) {
        for (const k of await redis.keys(`${entityKeyBase(key, prefix)}:*`)) {
          const type = await redis.type(k);
          state[k] = type === 'list' ? await redis.lrange(k, 0, -1) : await redis.get(k);
        }
      }
      return state;
    },
    async stallDatabase(entityKey) {
      // One connection of its own, holding the entity's row lock in an open transaction.
      const runner = db.dataSource.createQueryRunner();
      await runner.startTransaction();
      const lock = 'SELECT current_offset FROM application WHERE entity_key = ? FOR UPDATE';
      await runner.query(db.dialect === 'postgres' ? toPostgresPlaceholders(lock) : lock, [entityKey]);
      return async () => {
        await runner.rollbackTransaction();
        await runner.release();
      };
    },
    async currentOffset(entityKey) {
      const [row] = await db.query<{ c: string }>(
        `SELECT ${db.bigText('current_offset')} AS c FROM application WHERE entity_key = ?`,
        [entityKey],
      );
      return BigInt(row.c);
    },
    async cleanup() {
      await db.close();
      await clearPrefix(redis, prefix);
      redis.disconnect();
      await schema.drop();
    },
  };
}

export const mysqlRedisSetup = () => serverRedisSetup('mysql');

export async function sqliteMemorySetup(): Promise<StoreSetup> {
  const dir = mkdtempSync(join(tmpdir(), 'idpool-embedded-'));
  const file = join(dir, 'idpool.db');
  const open = () => {
    const db = new BetterSqlite3(file);
    db.pragma('busy_timeout = 5000');
    db.defaultSafeIntegers(true);
    return db;
  };
  return {
    name: 'sqlite+memory',
    needs: {},
    env: { IDPOOL_DATABASE_URL: `sqlite:${file}` },
    async applicationRows() {
      const db = open();
      try {
        return db.prepare('SELECT * FROM application ORDER BY id').all();
      } finally {
        db.close();
      }
    },
    async redisState() {
      return {};
    },
    async stallDatabase() {
      const db = open();
      db.exec('BEGIN IMMEDIATE');
      return async () => {
        db.exec('ROLLBACK');
        db.close();
      };
    },
    async currentOffset(entityKey) {
      const db = open();
      try {
        const row = db.prepare('SELECT current_offset FROM application WHERE entity_key = ?').get(entityKey) as {
          current_offset: number | bigint;
        };
        return BigInt(row.current_offset);
      } finally {
        db.close();
      }
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const STORE_SETUPS: { name: string; needs: StoreSetup['needs']; create: () => Promise<StoreSetup> }[] = [
  { name: 'mysql+redis', needs: { mysql: true, redis: true }, create: mysqlRedisSetup },
  { name: 'postgres+redis', needs: { postgres: true, redis: true }, create: () => serverRedisSetup('postgres') },
  { name: 'sqlite+memory', needs: {}, create: sqliteMemorySetup },
];
