import type { Database } from '../db/database';
import { classifySqlError } from '../db/errors';
import type { EntityConfig, EntitySecret, Tunables } from './entity';
import { MONOTONIC, type Row, TREND, incumbentColumns, secretColumns, toEntity } from './entity-row';

interface PendingInsert {
  entity: EntityConfig;
  resolve(inserted: boolean): void;
  reject(err: unknown): void;
}

function isDuplicate(err: unknown): boolean {
  return classifySqlError(err)?.kind === 'duplicate';
}

/** Entity configuration as stored: the `application` table, or a fake in unit tests. */
export interface EntityStore {
  findLive(key: string): Promise<EntityConfig | undefined>;
  /** Whether the key was ever registered (keys are never reused). */
  exists(key: string): Promise<boolean>;
  listLive(): Promise<EntityConfig[]>;
  /** Rows changed at or after `sinceMs`, retired ones included (with `retired: true`). */
  changedSince(sinceMs: number): Promise<{ entity: EntityConfig; retired: boolean }[]>;
  /** Inserts a new entity; returns false when the key is taken (live or retired). */
  insert(entity: EntityConfig): Promise<boolean>;
  /** Writes the tunables, where the row's `updateTime` is still `was` when given (not changed since it was read). */
  update(key: string, t: Tunables, updateTime: number, was?: number): Promise<boolean>;
  /** Replaces the entity's secrets (newest first), where the row's `updateTime` is still `was` when given. */
  setSecrets(key: string, secrets: readonly EntitySecret[], updateTime: number, was?: number): Promise<boolean>;
  /** Holds an entity (`held`: why) or serves it again (null). */
  setHeld(key: string, held: string | null, updateTime: number): Promise<boolean>;
  retire(key: string, at: number): Promise<boolean>;
}

/** The columns of an entity's tunables, in `tunableColumns` order. */
const TUNABLE_COLUMNS =
  'entity_name step max_size_per_times max_size_per_second min_size_percent interval max_pool_size compat'.split(' ');
const tunableColumns = (t: Tunables) => [
  t.name,
  t.step,
  t.maxSizePerTimes,
  t.maxSizePerSecond,
  t.minSizePercent,
  t.interval,
  t.maxPoolSize,
  t.compat.join(','),
];

/** The `application` columns, in INSERT order (`deleted_at` last, written 0); a read skips `current_offset` (the pool's). */
const COLUMNS = [
  ...TUNABLE_COLUMNS,
  ...(
    'entity_key id_mode increasing_type start_offset current_offset secret_hash secrets delta remainder held incumbent ' +
    'live alias number_format number_reset number_time_zone number_gapless create_time update_time deleted_at'
  ).split(' '),
];
/** BIGINT columns, read as text (`Database.bigText`) so no dialect rounds them. */
const BIG = new Set(['start_offset', 'create_time', 'update_time', 'deleted_at']);

/** Rows of the `application` table. The only SQL about entity configuration. */
export class SqlEntityStore implements EntityStore {
  /** What a SELECT lists, an INSERT names and an update of the tunables sets; `interval`, a reserved word, quoted. */
  private readonly columns: string;
  private readonly insertColumns: string;
  private readonly setTunables: string;

  constructor(private readonly db: Database) {
    const interval = db.dialect === 'mysql' ? '`interval`' : '"interval"';
    const name = (c: string) => (c === 'interval' ? interval : c);
    const read = (c: string) =>
      BIG.has(c) ? `${db.bigText(c)} AS ${c}` : c === 'interval' ? `${interval} AS ${interval}` : c;
    this.columns = COLUMNS.filter((c) => c !== 'current_offset')
      .map(read)
      .join(', ');
    this.insertColumns = COLUMNS.map(name).join(', ');
    this.setTunables = TUNABLE_COLUMNS.map((c) => `${name(c)} = ?`).join(', ');
  }

  /** The rows `where` picks, every column the store reads. */
  private select(where: string, params?: unknown[]): Promise<Row[]> {
    return this.db.query<Row>(`SELECT ${this.columns} FROM application WHERE ${where}`, params);
  }

  async findLive(key: string): Promise<EntityConfig | undefined> {
    return (await this.select('entity_key = ? AND deleted_at = 0', [key])).map(toEntity)[0];
  }

  async exists(key: string): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 AS x FROM application WHERE entity_key = ?`, [key]);
    return rows.length > 0;
  }

  async listLive(): Promise<EntityConfig[]> {
    return (await this.select('deleted_at = 0 ORDER BY entity_key')).map(toEntity);
  }

  async changedSince(sinceMs: number): Promise<{ entity: EntityConfig; retired: boolean }[]> {
    const rows = await this.select('update_time >= ?', [sinceMs]);
    return rows.map((row) => ({ entity: toEntity(row), retired: Number(row.deleted_at) !== 0 }));
  }

  /**
   * Registrations arriving while an INSERT is under way go together in one multi-row INSERT when it returns: one
   * commit for a burst instead of one each, which bounded registrations per second (bench/register.bench.ts).
   */
  insert(entity: EntityConfig): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.pending.push({ entity, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private readonly pending: PendingInsert[] = [];
  private flushing = false;

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, SqlEntityStore.MAX_BATCH);
        // A key asked for twice in one batch: the first goes in, the repeat waits for the next round (and conflicts there).
        const seen = new Set<string>();
        const distinct = batch.filter((b) => !seen.has(b.entity.key) && seen.add(b.entity.key));
        const first = new Set(distinct);
        this.pending.unshift(...batch.filter((b) => !first.has(b)));
        try {
          await this.insertRows(distinct.map((b) => b.entity));
          for (const b of distinct) b.resolve(true);
        } catch (err) {
          if (!isDuplicate(err)) {
            for (const b of distinct) b.reject(err);
            continue;
          }
          await this.settleTaken(distinct);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** After a batch hit a taken key: those taken answer false, the rest go back in the queue. */
  private async settleTaken(batch: PendingInsert[]): Promise<void> {
    let taken: Set<string>;
    try {
      const keys = batch.map((b) => b.entity.key);
      const rows = await this.db.query<{ k: string }>(
        `SELECT entity_key AS k FROM application WHERE entity_key IN (${keys.map(() => '?').join(', ')})`,
        keys,
      );
      taken = new Set(rows.map((r) => r.k));
    } catch (err) {
      for (const b of batch) b.reject(err);
      return;
    }
    const free = batch.filter((b) => !taken.has(b.entity.key));
    for (const b of batch) if (taken.has(b.entity.key)) b.resolve(false);
    // None taken yet the INSERT said duplicate: should not happen; answer row by row rather than loop.
    if (free.length === batch.length) {
      for (const b of free) {
        try {
          await this.insertRows([b.entity]);
          b.resolve(true);
        } catch (e) {
          if (isDuplicate(e)) b.resolve(false);
          else b.reject(e);
        }
      }
      return;
    }
    this.pending.unshift(...free);
  }

  /** Rows per INSERT: 27 placeholders each keeps a full batch far below every driver's parameter limit (SQLite: 32,766). */
  private static readonly MAX_BATCH = 500;

  private async insertRows(entities: readonly EntityConfig[]): Promise<void> {
    const row = `(${'?, '.repeat(COLUMNS.length - 1)}0)`;
    await this.db.execute(
      `INSERT INTO application (${this.insertColumns})
       VALUES ${entities.map(() => row).join(', ')}`,
      entities.flatMap((entity) => [
        ...tunableColumns(entity),
        entity.key,
        entity.mode === 'snowflake' ? 'snowflake' : 'segment',
        entity.mode === 'trend' ? TREND : MONOTONIC,
        entity.startOffset.toString(),
        entity.startOffset.toString(),
        ...secretColumns(entity.secrets),
        entity.delta,
        entity.remainder,
        entity.held ?? null,
        ...incumbentColumns(entity.incumbent),
        entity.alias ?? null,
        entity.numbers?.format ?? null,
        entity.numbers?.reset ?? null,
        entity.numbers?.timeZone ?? null,
        entity.gapless ? 1 : 0,
        entity.createTime,
        entity.updateTime,
      ]),
    );
  }

  update(key: string, t: Tunables, updateTime: number, was?: number): Promise<boolean> {
    return this.updateLive(`${this.setTunables}, update_time = ?`, [...tunableColumns(t), updateTime], key, was);
  }

  setSecrets(key: string, secrets: readonly EntitySecret[], updateTime: number, was?: number): Promise<boolean> {
    return this.updateLive(
      'secret_hash = ?, secrets = ?, update_time = ?',
      [...secretColumns(secrets), updateTime],
      key,
      was,
    );
  }

  setHeld(key: string, held: string | null, updateTime: number): Promise<boolean> {
    return this.updateLive('held = ?, update_time = ?', [held, updateTime], key);
  }

  retire(key: string, at: number): Promise<boolean> {
    return this.updateLive('deleted_at = ?, update_time = ?', [at, at], key);
  }

  /** `SET set` on the live row of `key` (whose `update_time` is `was`, when given); whether there was one. */
  private async updateLive(set: string, params: unknown[], key: string, was?: number): Promise<boolean> {
    const unchanged = was === undefined ? '' : ' AND update_time = ?';
    const result = await this.db.execute(
      `UPDATE application SET ${set} WHERE entity_key = ? AND deleted_at = 0${unchanged}`,
      [...params, key, ...(was === undefined ? [] : [was])],
    );
    return result.affectedRows === 1;
  }
}
