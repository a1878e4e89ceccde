import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { REDIS_URL, createTestSchema } from './services';

/**
 * The two store configurations every core HTTP test runs against: the
 * production shape (MariaDB + Redis) and the embedded default (SQLite file +
 * in-process pool).
 */
export interface StoreSetup {
  readonly name: string;
  readonly needs: { mysql?: boolean; redis?: boolean };
  readonly env: Record<string, string>;
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

export function uniqueKey(base: string): string {
  return `${base}_${randomBytes(3).toString('hex')}`;
}

export async function mysqlRedisSetup(): Promise<StoreSetup> {
  const schema = await createTestSchema();
  const sql = await createConnection({ uri: schema.url, supportBigNumbers: true, bigNumberStrings: true });
  const redis = new Redis(REDIS_URL);
  return {
    name: 'mysql+redis',
    needs: { mysql: true, redis: true },
    env: { IDPOOL_DATABASE_URL: schema.url, IDPOOL_REDIS_URL: REDIS_URL },
    async applicationRows() {
      const [rows] = await sql.query('SELECT * FROM application ORDER BY id');
      return rows as unknown[];
    },
    async redisState(keys) {
      const state: Record<string, unknown> = {};
      for (const key of keys) {
        for (const k of await redis.keys(`idpool:{${key}}:*`)) {
          const type = await redis.type(k);
          state[k] = type === 'list' ? await redis.lrange(k, 0, -1) : await redis.get(k);
        }
      }
      return state;
    },
    async stallDatabase(entityKey) {
      const c = await createConnection({ uri: schema.url });
      await c.query('BEGIN');
      await c.query('SELECT current_offset FROM application WHERE entity_key = ? FOR UPDATE', [entityKey]);
      return async () => {
        await c.query('ROLLBACK');
        await c.end();
      };
    },
    async currentOffset(entityKey) {
      const [rows] = await sql.query('SELECT current_offset FROM application WHERE entity_key = ?', [entityKey]);
      return BigInt((rows as Array<{ current_offset: string }>)[0].current_offset);
    },
    async cleanup() {
      await sql.end();
      redis.disconnect();
      await schema.drop();
    },
  };
}

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
        const row = db.prepare('SELECT current_offset FROM application WHERE entity_key = ?').get(entityKey) as { current_offset: bigint };
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

export const STORE_SETUPS: Array<{ name: string; needs: { mysql?: boolean; redis?: boolean }; create: () => Promise<StoreSetup> }> = [
  { name: 'mysql+redis', needs: { mysql: true, redis: true }, create: mysqlRedisSetup },
  { name: 'sqlite+memory', needs: {}, create: sqliteMemorySetup },
];
