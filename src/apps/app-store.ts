import type { Database } from '../db/database';
import type { AppConfig, AppMode, Tunables } from './app';

interface Row {
  entity_key: string;
  entity_name: string;
  id_mode: string;
  increasing_type: number | string;
  start_offset: string;
  step: number | string;
  current_offset?: string;
  max_size_per_times: number | string;
  max_size_per_second: number | string;
  min_size_percent: number | string;
  interval: number | string;
  max_pool_size: number | string;
  secret_hash: string;
  create_time: number | string;
  update_time: number | string;
  deleted_at: number | string;
}

const MONOTONIC = 1;
const TREND = 2;

function toApp(row: Row): AppConfig {
  const mode: AppMode = row.id_mode === 'snowflake' ? 'snowflake' : Number(row.increasing_type) === TREND ? 'trend' : 'monotonic';
  return {
    key: row.entity_key,
    name: row.entity_name,
    mode,
    startOffset: BigInt(row.start_offset),
    step: Number(row.step),
    maxSizePerTimes: Number(row.max_size_per_times),
    maxSizePerSecond: Number(row.max_size_per_second),
    minSizePercent: Number(row.min_size_percent),
    maxPoolSize: Number(row.max_pool_size),
    interval: Number(row.interval),
    secretHash: row.secret_hash,
    createTime: Number(row.create_time),
    updateTime: Number(row.update_time),
  };
}

/** Entity configuration as stored: the `application` table, or a fake in unit tests. */
export interface AppStore {
  findLive(key: string): Promise<AppConfig | undefined>;
  /** Whether the key was ever registered (live or retired): keys are never reused. */
  exists(key: string): Promise<boolean>;
  listLive(): Promise<AppConfig[]>;
  /** Rows changed at or after `sinceMs`, retired ones included (with `retired: true`). */
  changedSince(sinceMs: number): Promise<Array<{ app: AppConfig; retired: boolean }>>;
  /** Inserts a new entity; returns false when the key is taken (live or retired). */
  insert(app: AppConfig): Promise<boolean>;
  update(key: string, t: Tunables, updateTime: number): Promise<boolean>;
  setSecretHash(key: string, secretHash: string, updateTime: number): Promise<boolean>;
  retire(key: string, at: number): Promise<boolean>;
}

/** Rows of the `application` table. The only SQL about entity configuration. */
export class SqlAppStore implements AppStore {
  private readonly columns: string;

  constructor(private readonly db: Database) {
    const q = (c: string) => (db.dialect === 'mysql' ? `\`${c}\`` : `"${c}"`);
    this.columns = [
      'entity_key',
      'entity_name',
      'id_mode',
      'increasing_type',
      `${db.bigText('start_offset')} AS start_offset`,
      'step',
      'max_size_per_times',
      'max_size_per_second',
      'min_size_percent',
      `${q('interval')} AS ${q('interval')}`,
      'max_pool_size',
      'secret_hash',
      `${db.bigText('create_time')} AS create_time`,
      `${db.bigText('update_time')} AS update_time`,
      `${db.bigText('deleted_at')} AS deleted_at`,
    ].join(', ');
    this.quote = q;
  }

  private readonly quote: (c: string) => string;

  async findLive(key: string): Promise<AppConfig | undefined> {
    const rows = await this.db.query<Row>(`SELECT ${this.columns} FROM application WHERE entity_key = ? AND deleted_at = 0`, [key]);
    return rows[0] ? toApp(rows[0]) : undefined;
  }

  /** Whether the key was ever registered (live or retired): keys are never reused. */
  async exists(key: string): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 AS x FROM application WHERE entity_key = ?`, [key]);
    return rows.length > 0;
  }

  async listLive(): Promise<AppConfig[]> {
    const rows = await this.db.query<Row>(`SELECT ${this.columns} FROM application WHERE deleted_at = 0 ORDER BY entity_key`);
    return rows.map(toApp);
  }

  /** Rows changed at or after `sinceMs`, retired ones included (with `retired: true`). */
  async changedSince(sinceMs: number): Promise<Array<{ app: AppConfig; retired: boolean }>> {
    const rows = await this.db.query<Row>(`SELECT ${this.columns} FROM application WHERE update_time >= ?`, [sinceMs]);
    return rows.map((row) => ({ app: toApp(row), retired: Number(row.deleted_at) !== 0 }));
  }

  /** Inserts a new entity; returns false when the key is taken (live or retired). */
  async insert(app: AppConfig): Promise<boolean> {
    try {
      await this.db.execute(
        `INSERT INTO application (entity_key, entity_name, id_mode, increasing_type, start_offset, step, current_offset, max_size_per_times, max_size_per_second, min_size_percent, ${this.quote('interval')}, max_pool_size, secret_hash, create_time, update_time, deleted_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
        [
          app.key,
          app.name,
          app.mode === 'snowflake' ? 'snowflake' : 'segment',
          app.mode === 'trend' ? TREND : MONOTONIC,
          app.startOffset.toString(),
          app.step,
          app.startOffset.toString(),
          app.maxSizePerTimes,
          app.maxSizePerSecond,
          app.minSizePercent,
          app.interval,
          app.maxPoolSize,
          app.secretHash,
          app.createTime,
          app.updateTime,
        ],
      );
      return true;
    } catch (err) {
      if (/duplicate|unique/i.test(String((err as Error).message))) return false;
      throw err;
    }
  }

  async update(key: string, t: Tunables, updateTime: number): Promise<boolean> {
    const result = await this.db.execute(
      `UPDATE application SET entity_name = ?, step = ?, max_size_per_times = ?, max_size_per_second = ?, min_size_percent = ?, ${this.quote('interval')} = ?, max_pool_size = ?, update_time = ? WHERE entity_key = ? AND deleted_at = 0`,
      [t.name, t.step, t.maxSizePerTimes, t.maxSizePerSecond, t.minSizePercent, t.interval, t.maxPoolSize, updateTime, key],
    );
    return result.affectedRows === 1;
  }

  async setSecretHash(key: string, secretHash: string, updateTime: number): Promise<boolean> {
    const result = await this.db.execute(`UPDATE application SET secret_hash = ?, update_time = ? WHERE entity_key = ? AND deleted_at = 0`, [secretHash, updateTime, key]);
    return result.affectedRows === 1;
  }

  async retire(key: string, at: number): Promise<boolean> {
    const result = await this.db.execute(`UPDATE application SET deleted_at = ?, update_time = ? WHERE entity_key = ? AND deleted_at = 0`, [at, at, key]);
    return result.affectedRows === 1;
  }
}
