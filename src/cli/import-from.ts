import { closeSync, writeSync } from 'node:fs';
import { HELD_BY_IMPORT, KEY_PATTERN, LIMITS, providedSecret, registerSchema } from '../entities/entity';
import { MAX_SECRETS } from '../entities/secrets';
import { type AdminApi, entityPath } from './admin-api';
import { createSecretsFile } from './import';
import { CliError, EXIT_USAGE } from './errors';
import { TINYID_BATCH_MAX } from '../http/settings';
import type { Answer } from '../http/openapi/schemas';

/** The services idpool imports from (docs/migrating.md). */
export type Incumbent = 'leaf' | 'tinyid';

/** One row of the incumbent's table, as read. */
export interface IncumbentRow {
  key: string;
  /** `leaf_alloc.max_id` / `tiny_id_info.max_id`, exactly (may pass 2^53). */
  maxId: bigint;
  step: number | null;
  /** Leaf's `description`; Tinyid has none. */
  description: string | null;
  delta: number;
  remainder: number;
  /** Tinyid tokens that may take this biz type. */
  tokens: string[];
}

/** What the importer will do with one row. */
export interface PlannedEntity {
  key: string;
  /** The incumbent's row it comes from (its `biz_tag` / `biz_type`): `key`, or the misfit tag `--key TAG=KEY` renamed. */
  tag: string;
  /** The first id no incumbent instance can have issued. */
  firstId: bigint;
  maxId: bigint;
  /** The `POST /admin/apps` body. */
  body: Record<string, unknown>;
  /** Tokens that become secrets (Tinyid), each checked against idpool's rules. */
  tokens: string[];
  /** Said about the row without refusing it (a step clamped, a token left out). */
  notes: string[];
}

export interface ImportPlan {
  entities: PlannedEntity[];
  /** Rows left out, and why (a key idpool's rules refuse, an id line used up). */
  skipped: { key: string; reason: string }[];
}

/**
 * The first id safe to issue after the incumbent stopped: Leaf reserves `[max_id − step, max_id − 1]`, so `max_id`
 * itself; Tinyid issues up to `max_id` inclusive, only numbers ≡ remainder (mod delta), so the first such above it.
 */
export function firstSafeId(kind: Incumbent, row: Pick<IncumbentRow, 'maxId' | 'delta' | 'remainder'>): bigint {
  if (kind === 'leaf') return row.maxId < 0n ? 0n : row.maxId;
  const delta = BigInt(row.delta);
  const next = row.maxId + 1n;
  const shift = (((BigInt(row.remainder) - next) % delta) + delta) % delta;
  const first = next + shift;
  return first < 0n ? BigInt(row.remainder) : first;
}

/** Rows of several databases of one incumbent, one per key: the highest `max_id` wins, tokens are pooled. */
export function mergeRows(sets: IncumbentRow[][]): IncumbentRow[] {
  const byKey = new Map<string, IncumbentRow>();
  for (const row of sets.flat()) {
    const known = byKey.get(row.key);
    const tokens = known ? [...new Set([...known.tokens, ...row.tokens])] : [...row.tokens];
    byKey.set(row.key, known && known.maxId >= row.maxId ? { ...known, tokens } : { ...row, tokens });
  }
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * `--key TAG=KEY` pairs, tag to key: only a tag that does not fit idpool's keys, to a key that fits, names no other row
 * and is given once. Split at the last `=`: a key has none, a tag may.
 */
export function parseRenames(pairs: readonly string[], rows: readonly IncumbentRow[]): Map<string, string> {
  const tags = new Set(rows.map((r) => r.key));
  const renames = new Map<string, string>();
  for (const pair of pairs) {
    const at = pair.lastIndexOf('=');
    const [tag, key] = at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
    const refuse = (why: string) => new CliError(EXIT_USAGE, `--key ${JSON.stringify(pair)}: ${why}`);
    if (at < 0 || tag === '') throw refuse('give TAG=KEY, e.g. --key order:v2=order_v2');
    if (!tags.has(tag)) throw refuse(`the incumbent's table has no row ${JSON.stringify(tag)}`);
    if (KEY_PATTERN.test(tag)) throw refuse(`${JSON.stringify(tag)} fits idpool's keys: it is imported under itself`);
    if (!KEY_PATTERN.test(key)) throw refuse(`${JSON.stringify(key)} is not an idpool key (1-64 of A-Z a-z 0-9 _ - .)`);
    if (tags.has(key)) throw refuse(`${JSON.stringify(key)} is another row's tag: pick a key no row has`);
    if (renames.has(tag)) throw refuse(`${JSON.stringify(tag)} is given twice`);
    if ([...renames.values()].includes(key)) throw refuse(`${JSON.stringify(key)} is given to two tags`);
    renames.set(tag, key);
  }
  return renames;
}

/** What the importer does with each row; `only` keeps the named tags, `renames` imports misfit tags under keys (`parseRenames`). */
export function planImport(
  kind: Incumbent,
  rows: IncumbentRow[],
  only?: ReadonlySet<string>,
  renames: ReadonlyMap<string, string> = new Map(),
): ImportPlan {
  const plan: ImportPlan = { entities: [], skipped: [] };
  for (const row of rows) {
    if (only && !only.has(row.key)) continue;
    const planned = planRow(kind, row, renames.get(row.key) ?? row.key);
    if (typeof planned === 'string') plan.skipped.push({ key: row.key, reason: planned });
    else plan.entities.push(planned);
  }
  return plan;
}

/** One row's entity under `key`, or why the row is skipped. */
function planRow(kind: Incumbent, row: IncumbentRow, key: string): PlannedEntity | string {
  if (!KEY_PATTERN.test(key))
    return `key does not fit idpool (1-64 of A-Z a-z 0-9 _ - .): import it under a key of your choice with --key '${row.key}=KEY'`;
  if (row.delta < 1 || row.delta > LIMITS.delta || row.remainder < 0 || row.remainder >= row.delta)
    return `delta ${row.delta} / remainder ${row.remainder} out of range`;
  const firstId = firstSafeId(kind, row);
  if (firstId >= LIMITS.startOffset) return `first safe id ${firstId} is past 2^62, idpool's bound`;
  const notes: string[] = [];
  const body: Record<string, unknown> = {
    key,
    firstId: firstId.toString(),
    incumbent: { kind, key: row.key, live: false },
  };
  if (row.step !== null && row.step > 0) {
    body.step = Math.min(row.step, LIMITS.step);
    if (row.step > LIMITS.step) notes.push(`step ${row.step} lowered to idpool's ${LIMITS.step}`);
  }
  const name = row.description?.trim();
  if (name && registerSchema.shape.name.safeParse(name).success) body.name = name;
  else if (name)
    notes.push('description not usable as a name (over 128 characters or control characters); named by key');
  const tokens: string[] = [];
  if (kind === 'leaf') {
    body.mode = 'monotonic';
    body.compat = ['leaf'];
  } else {
    // A Tinyid client hands out ids from its own segments: no global order.
    body.mode = 'trend';
    // As Tinyid served them: no per-second limit (a step above it could never be leased), nextId up to batch.size.max.
    body.maxSizePerSecond = 0;
    body.maxSizePerTimes = TINYID_BATCH_MAX;
    if (row.delta !== 1 || row.remainder !== 0) Object.assign(body, { delta: row.delta, remainder: row.remainder });
    for (const token of row.tokens) {
      if (!providedSecret.safeParse(token).success)
        notes.push(`a token of ${token.length} characters left out: secrets are 16-256 printable ASCII characters`);
      else tokens.push(token);
    }
    if (tokens.length > MAX_SECRETS) {
      notes.push(
        `${tokens.length - MAX_SECRETS} of its ${tokens.length} tokens left out: at most ${MAX_SECRETS} secrets per entity`,
      );
      tokens.length = MAX_SECRETS;
    }
  }
  return { key, tag: row.key, firstId, maxId: row.maxId, body, tokens, notes };
}

/** What happened to one planned entity. */
export interface ImportOutcome {
  key: string;
  /** The incumbent's tag, when imported under another key (`--key`): Leaf's and Tinyid's routes answer it. */
  tag?: string;
  /** `registered` now, or `exists` from an earlier run (or by hand). */
  status: 'registered' | 'exists';
  firstId: string;
  /** Tokens newly accepted as secrets (Tinyid). */
  secretsAdded: number;
  /** An existing entity that started below this row's first safe id, moved up to it (`POST /admin/apps/:key/raise`). */
  raised?: boolean;
  /** A live import: whether the entity reserves from its row (false: it existed before, registered otherwise). */
  live?: boolean;
}

/**
 * Registers the plan one entity at a time, each held (served on no route), then reads the rows again: an entity whose
 * row moved may repeat the incumbent's ids and stays held, the others are released. A live import registers each
 * entity reserving from its row instead: nothing to hold or read again.
 */
export async function runImport(
  api: Pick<AdminApi, 'get' | 'post'>,
  plan: ImportPlan,
  reread: () => Promise<IncumbentRow[]>,
  o: { secretsPath?: string; onOutcome?: (o: ImportOutcome) => void; live?: boolean },
): Promise<{ outcomes: ImportOutcome[]; moved: { key: string; before: string; after: string }[] }> {
  const fd = o.secretsPath === undefined ? undefined : createSecretsFile(o.secretsPath);
  const outcomes: ImportOutcome[] = [];
  try {
    for (const item of plan.entities) {
      const first = item.tokens.length > 0 ? item.tokens[0] : undefined;
      const more = item.tokens.slice(1);
      const body = {
        ...item.body,
        ...(first === undefined ? {} : { secret: first }),
        ...(o.live ? { incumbent: { ...(item.body.incumbent as object), live: true } } : { held: HELD_BY_IMPORT }),
      };
      let outcome: ImportOutcome;
      try {
        const created = await api.post<{ secret: string }>('/admin/apps', body);
        // A made secret is shown this once: keep it (Leaf rows; Tinyid rows without a token).
        if (first === undefined && fd !== undefined)
          writeSync(fd, `${JSON.stringify({ key: item.key, secret: created.secret })}\n`);
        outcome = {
          ...named(item),
          status: 'registered',
          secretsAdded: first ? 1 : 0,
          ...(o.live ? { live: true } : {}),
        };
      } catch (err) {
        if (!(err instanceof CliError) || err.code !== 'conflict') throw err;
        outcome = { ...named(item), status: 'exists', secretsAdded: 0 };
        const existing = await api.get<EntityView>(entityPath(item.key));
        if (o.live) {
          // Reserving from its row already, or registered otherwise: a live import changes neither.
          outcome.live = existing.incumbent?.live === true;
          outcomes.push(outcome);
          o.onOutcome?.(outcome);
          continue;
        }
        // An entity from an earlier run (or registered by hand) must hand out nothing below this row's first
        // safe id: the row moved since (the old service ran on), so its line moves up (at worst a needless raise).
        if (await raiseTo(api, item.key, existing, item.firstId)) outcome.raised = true;
        if (first !== undefined && (await addToken(api, item.key, first))) outcome.secretsAdded++;
      }
      for (const token of more) if (await addToken(api, item.key, token)) outcome.secretsAdded++;
      outcomes.push(outcome);
      o.onOutcome?.(outcome);
    }
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (o.live) return { outcomes, moved: [] };
  const now = new Map((await reread()).map((r) => [r.key, r.maxId]));
  const moved = plan.entities
    .filter((e) => now.get(e.tag) !== e.maxId)
    .map((e) => ({ key: e.key, before: e.maxId.toString(), after: String(now.get(e.tag) ?? 'gone') }));
  // Held since registration; held now too if it existed before (served, and its pool discarded).
  const stayHeld = new Set(moved.map((m) => m.key));
  for (const e of plan.entities) await api.post(`${entityPath(e.key)}/${stayHeld.has(e.key) ? 'hold' : 'release'}`, {});
  return { outcomes, moved };
}

/** The fields of an entity (`GET /admin/apps/:key`) an import and `apps release` read: a segment entity has each. */
export type EntityView = Required<Pick<Answer<'Entity'>, 'startOffset' | 'delta' | 'remainder' | 'held' | 'incumbent'>>;

/** Moves an entity's line up to `firstId` when it may still hand out an id below it; true when it did. */
export async function raiseTo(api: Pick<AdminApi, 'post'>, key: string, entity: EntityView, firstId: bigint) {
  // Its lowest id for a stride of 1 (a wider one only places it higher).
  if (BigInt(entity.startOffset) * BigInt(entity.delta) + BigInt(entity.remainder) >= firstId) return false;
  await api.post(`${entityPath(key)}/raise`, { firstId: firstId.toString() });
  return true;
}

/** An outcome's key, its row's tag when imported under another key, and its first id. */
export const named = (e: Pick<PlannedEntity, 'key' | 'tag' | 'firstId'>) => ({
  key: e.key,
  ...(e.tag === e.key ? {} : { tag: e.tag }),
  firstId: e.firstId.toString(),
});

/** Accepts `token` as a secret of `key`; true when it was new (the API adds a known one only once). */
async function addToken(api: Pick<AdminApi, 'post'>, key: string, token: string): Promise<boolean> {
  return (await api.post<{ added: boolean }>(`${entityPath(key)}/secrets`, { secret: token })).added;
}
