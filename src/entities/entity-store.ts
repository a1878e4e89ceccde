import type { Database } from '../db/database';
import { classifySqlError } from '../db/errors';
import type { Reset } from '../numbers/period';
import {
  COMPAT_PROTOCOLS,
  type CompatProtocol,
  type EntityConfig,
  type EntityMode,
  type EntitySecret,
  type IncumbentSource,
  type Tunables,
} from './entity';

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

/** The `application` columns the store reads, as any dialect returns them; `toEntity` turns them into an entity. */
interface Row {
  entity_key: string;
  entity_name: string;
  id_mode: string;
  increasing_type: number | string;
  start_offset: string;
  step: number | string;
  max_size_per_times: number | string;
  max_size_per_second: number | string;
  min_size_percent: number | string;
  interval: number | string;
  max_pool_size: number | string;
  secret_hash: string;
  delta: number | string;
  remainder: number | string;
  compat: string;
  secrets: string | null;
  /** Added by the HeldAndLiveEntities migration (undefined in rows read before it ran). */
  held?: string | null;
  incumbent?: string | null;
  live?: number | string;
  /** Added by the IncumbentAlias migration. */
  alias?: string | null;
  number_format: string | null;
  number_reset: string | null;
  number_time_zone: string | null;
  /** Added by the GaplessSeries migration. */
  number_gapless?: number | string;
  create_time: number | string;
  update_time: number | string;
  deleted_at: number | string;
}

/** `increasing_type` of a segment entity (Leaf's column). */
const MONOTONIC = 1;
const TREND = 2;

function toEntity(row: Row): EntityConfig {
  const mode: EntityMode =
    row.id_mode === 'snowflake' ? 'snowflake' : Number(row.increasing_type) === TREND ? 'trend' : 'monotonic';
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
    delta: Number(row.delta),
    remainder: Number(row.remainder),
    compat: parseCompat(row.compat),
    secrets: parseSecrets(row),
    ...(row.number_format && {
      numbers: {
        format: row.number_format,
        reset: (row.number_reset ?? 'never') as Reset,
        timeZone: row.number_time_zone ?? 'UTC',
      },
      ...(Number(row.number_gapless) === 1 && { gapless: true }),
    }),
    createTime: Number(row.create_time),
    updateTime: Number(row.update_time),
    held: row.held ?? null,
    incumbent: parseIncumbent(row),
    alias: row.alias ?? null,
  };
}

/** The `incumbent` column, `leaf:TAG` / `tinyid:TYPE` (the tag may hold colons), with `live`. */
function parseIncumbent(row: Pick<Row, 'incumbent' | 'live'>): IncumbentSource | null {
  const text = row.incumbent;
  if (!text) return null;
  const at = text.indexOf(':');
  const kind = text.slice(0, at);
  if (kind !== 'leaf' && kind !== 'tinyid') return null;
  return { kind, key: text.slice(at + 1), live: Number(row.live) === 1 };
}

/** The `compat` column: protocol names, comma-separated; a name this version does not know is ignored (never served). */
function parseCompat(text: string): CompatProtocol[] {
  return text.split(',').filter((p): p is CompatProtocol => (COMPAT_PROTOCOLS as readonly string[]).includes(p));
}

/** The `secrets` column (JSON, newest first); a row written before it existed has only `secret_hash`. */
function parseSecrets(row: Pick<Row, 'secrets' | 'secret_hash' | 'create_time'>): EntitySecret[] {
  if (row.secrets) return JSON.parse(row.secrets) as EntitySecret[];
  return [{ id: 'primary', hash: row.secret_hash, createTime: Number(row.create_time), expiresAt: null }];
}

/** `secret_hash` keeps the newest secret's hash (what a reader of the row before `secrets` existed checks). */
const newestHash = (secrets: readonly EntitySecret[]) => secrets[0]?.hash ?? '';

/** The tunables' columns and values, in the order an INSERT and an update of the tunables write them. */
const TUNABLES: [column: string, value: (t: Tunables) => unknown][] = [
  ['entity_name', (t) => t.name],
  ['step', (t) => t.step],
  ['max_size_per_times', (t) => t.maxSizePerTimes],
  ['max_size_per_second', (t) => t.maxSizePerSecond],
  ['min_size_percent', (t) => t.minSizePercent],
  ['interval', (t) => t.interval],
  ['max_pool_size', (t) => t.maxPoolSize],
  ['compat', (t) => t.compat.join(',')],
];

/** Every column an INSERT writes, and its value, in order. */
const WRITTEN: [column: string, value: (e: EntityConfig) => unknown][] = [
  ...TUNABLES,
  ['entity_key', (e) => e.key],
  ['id_mode', (e) => (e.mode === 'snowflake' ? 'snowflake' : 'segment')],
  ['increasing_type', (e) => (e.mode === 'trend' ? TREND : MONOTONIC)],
  ['start_offset', (e) => e.startOffset.toString()],
  ['current_offset', (e) => e.startOffset.toString()],
  ['secret_hash', (e) => newestHash(e.secrets)],
  ['secrets', (e) => JSON.stringify(e.secrets)],
  ['delta', (e) => e.delta],
  ['remainder', (e) => e.remainder],
  ['held', (e) => e.held ?? null],
  ['incumbent', (e) => (e.incumbent ? `${e.incumbent.kind}:${e.incumbent.key}` : null)],
  ['live', (e) => (e.incumbent?.live ? 1 : 0)],
  ['alias', (e) => e.alias ?? null],
  ['number_format', (e) => e.numbers?.format ?? null],
  ['number_reset', (e) => e.numbers?.reset ?? null],
  ['number_time_zone', (e) => e.numbers?.timeZone ?? null],
  ['number_gapless', (e) => (e.gapless ? 1 : 0)],
  ['create_time', (e) => e.createTime],
  ['update_time', (e) => e.updateTime],
];
/** The `application` columns, in INSERT order (`deleted_at` last, written 0); a read skips `current_offset` (the pool's). */
const COLUMNS = [...WRITTEN.map(([column]) => column), 'deleted_at'];
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
    this.setTunables = TUNABLES.map(([c]) => `${name(c)} = ?`).join(', ');
  }

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
          if (isDuplicate(err)) await this.settleTaken(distinct);
          else for (const b of distinct) b.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** After a batch hit a taken key: those taken answer false, the rest go back in the queue. */
  private async settleTaken(batch: PendingInsert[]): Promise<void> {
    const keys = batch.map((b) => b.entity.key);
    const sql = `SELECT entity_key AS k FROM application WHERE entity_key IN (${keys.map(() => '?').join(', ')})`;
    const rows = await this.db.query<{ k: string }>(sql, keys).catch((err: unknown) => {
      for (const b of batch) b.reject(err);
    });
    if (!rows) return;
    const taken = new Set(rows.map((r) => r.k));
    const free = batch.filter((b) => !taken.has(b.entity.key));
    for (const b of batch) if (taken.has(b.entity.key)) b.resolve(false);
    // No key taken, yet the INSERT said duplicate: another unique column (an alias) clashed; answered row by row.
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
      entities.flatMap((entity) => WRITTEN.map(([, value]) => value(entity))),
    );
  }

  update(key: string, t: Tunables, updateTime: number, was?: number): Promise<boolean> {
    const values = TUNABLES.map(([, value]) => value(t));
    return this.updateLive(`${this.setTunables}, update_time = ?`, [...values, updateTime], key, was);
  }

  setSecrets(key: string, secrets: readonly EntitySecret[], updateTime: number, was?: number): Promise<boolean> {
    return this.updateLive(
      'secret_hash = ?, secrets = ?, update_time = ?',
      [newestHash(secrets), JSON.stringify(secrets), updateTime],
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
