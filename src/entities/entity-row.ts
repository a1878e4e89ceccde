/** An `application` row and its entity, both ways, whatever each dialect returns for a column. */
import type { Reset } from '../numbers/period';
import {
  COMPAT_PROTOCOLS,
  type CompatProtocol,
  type EntityConfig,
  type EntityMode,
  type EntitySecret,
  type IncumbentSource,
} from './entity';

/** The `application` columns the store reads. */
export interface Row {
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
export const MONOTONIC = 1;
export const TREND = 2;

export function toEntity(row: Row): EntityConfig {
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

export const incumbentColumns = (source: IncumbentSource | null | undefined) => [
  source ? `${source.kind}:${source.key}` : null,
  source?.live ? 1 : 0,
];

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
export const secretColumns = (secrets: readonly EntitySecret[]) => [secrets[0]?.hash ?? '', JSON.stringify(secrets)];
