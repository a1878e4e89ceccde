/** The end of a move from Leaf or Tinyid (docs/migrating.md): `apps release KEY` and `apps import-from … --finish`. */
import type { Command } from 'commander';
import { systemClock } from '../clock';
import { type AdminApi, entityPath } from './admin-api';
import { type CliContext, repeatable } from './context';
import { CliError, EXIT_FAILURE, EXIT_USAGE } from './errors';
import { type EntityView, type Incumbent, type IncumbentRow, firstSafeId, raiseTo } from './import-from';
import { readAll } from './incumbent-rows';
import type { Answer } from '../http/openapi/schemas';

export function addRelease(group: Command, ctx: CliContext): void {
  group
    .command('release')
    .description("serve a held entity again, after reading its incumbent's row once more (raised above it if it moved)")
    .argument('<key>', 'entity key')
    .option(
      '--database-url <url>',
      "the incumbent's database (repeat for several Tinyid databases); needed when the entity was imported",
      repeatable,
    )
    .action(async (key: string, opts: { databaseUrl?: string[] }, cmd: Command) => {
      const api = ctx.admin(cmd);
      const path = entityPath(key);
      const entity = await api.get<EntityView>(path);
      if (!entity.held) {
        ctx.print(cmd, { key, released: false, reason: 'not held' }, () => `${key} is not held: nothing to do\n`);
        return;
      }
      let raisedTo: string | undefined;
      const source = entity.incumbent;
      if (source && !source.live) {
        if (!opts.databaseUrl)
          throw new CliError(
            EXIT_USAGE,
            `${key} was imported from ${source.kind}'s row "${source.key}": give --database-url so it is read once more before ${key} serves`,
          );
        const row = (await readAll(source.kind, opts.databaseUrl)).find((r) => r.key === source.key);
        if (!row) throw new CliError(EXIT_FAILURE, `${source.kind}'s table has no row "${source.key}"`);
        const first = firstSafeId(source.kind, row);
        if (await raiseTo(api, key, entity, first)) raisedTo = first.toString();
      }
      await api.post(`${path}/release`, {});
      ctx.print(
        cmd,
        { key, released: true, ...(raisedTo ? { raisedTo } : {}) },
        () => `released ${key}${raisedTo ? ` (its row had moved: raised to first id ${raisedTo})` : ''}\n`,
      );
    });
}

/** Observation windows `--finish` tries before it decides the incumbent still runs (one in-flight reservation can blur one window). */
const OBSERVATIONS = 3;

/**
 * Moves every live entity of `kind` (all, or `only`) above its row's final value (`POST /admin/apps/:key/finish`) once
 * the incumbent stopped: over an observation window each row may move only by what idpool reserved from it
 * (`live_reserved`), else nothing is finished. The two are read at once, not atomically, so a server reserving less
 * than idpool did between the reads can pass unseen: unlikely, not impossible (docs/migrating.md: stop it first).
 */
export async function runFinish(
  api: Pick<AdminApi, 'get' | 'post'>,
  kind: Incumbent,
  readRows: () => Promise<IncumbentRow[]>,
  o: { only?: ReadonlySet<string>; observeMs: number; sleep: (ms: number) => Promise<void>; say: (l: string) => void },
) {
  const lines = async () =>
    new Map(
      (await api.get<Answer<'LiveCutovers'>>('/admin/live')).apps
        .filter((l) => l.incumbent.kind === kind && (!o.only || o.only.has(l.key)))
        .map((l) => [l.key, l]),
    );
  const rows = async () => new Map((await readRows()).map((r) => [r.key, r.maxId]));
  let moved: string[] = [];
  for (let attempt = 1; attempt <= OBSERVATIONS; attempt++) {
    // idpool's count read first at the start and last at the end, each beside the rows: a reservation
    // between the two reads can only add to idpool's share, never to the incumbent's.
    const [before, rowsBefore] = await Promise.all([lines(), rows()]);
    if (before.size === 0) return [];
    o.say(`watching ${before.size} row(s) for ${o.observeMs / 1000} s: each may move only by what idpool reserves`);
    await o.sleep(o.observeMs);
    const [rowsAfter, after] = await Promise.all([rows(), lines()]);
    moved = [];
    for (const [key, line] of before) {
      const source = line.incumbent.key;
      const rowMoved = (rowsAfter.get(source) ?? 0n) - (rowsBefore.get(source) ?? 0n);
      const ours =
        (BigInt(after.get(key)?.reservedFromIncumbent ?? line.reservedFromIncumbent) -
          BigInt(line.reservedFromIncumbent)) *
        BigInt(line.delta);
      if (rowMoved > ours) moved.push(`${key} (max_id +${rowMoved}, idpool's +${ours})`);
    }
    if (moved.length === 0) break;
    if (attempt < OBSERVATIONS) o.say(`rows moved by others: ${moved.join(', ')}; watching again`);
  }
  if (moved.length > 0)
    throw new CliError(
      EXIT_FAILURE,
      `the incumbent still issues ids: ${moved.join(', ')}; stop every instance of it (and every client of it), then run --finish again; nothing was finished`,
    );
  const outcomes: { key: string; maxId: string; firstId: string }[] = [];
  const final = await readRows();
  for (const line of (await lines()).values()) {
    const row = final.find((r) => r.key === line.incumbent.key);
    if (!row) throw new CliError(EXIT_FAILURE, `${kind}'s table has no row "${line.incumbent.key}" any more`);
    const firstId = firstSafeId(kind, row);
    await api.post(`${entityPath(line.key)}/finish`, { firstId: firstId.toString() });
    outcomes.push({ key: line.key, maxId: row.maxId.toString(), firstId: firstId.toString() });
  }
  return outcomes;
}

export async function finishCommand(
  ctx: CliContext,
  cmd: Command,
  kind: Incumbent,
  o: { databaseUrl: readonly string[]; only?: string[]; observeSeconds: number },
): Promise<void> {
  const outcomes = await runFinish(ctx.admin(cmd), kind, () => readAll(kind, o.databaseUrl), {
    only: o.only ? new Set(o.only) : undefined,
    observeMs: o.observeSeconds * 1000,
    sleep: (ms) => systemClock.sleep(ms),
    say: (line) => ctx.note(cmd, line),
  });
  ctx.print(cmd, { finished: outcomes }, () =>
    outcomes.length === 0
      ? `no live ${kind} entity to finish\n`
      : outcomes
          .map((f) => `finished ${f.key}: idpool's own table from first id ${f.firstId} (row max_id ${f.maxId})\n`)
          .join('') +
        `${outcomes.length} moved onto idpool's table; ${kind}'s database is no longer used for them (unset IDPOOL_${kind.toUpperCase()}_DATABASE_URL once every entity is finished)\n`,
  );
}
