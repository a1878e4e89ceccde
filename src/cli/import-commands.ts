/** `apps import` (a JSON-lines file) and `apps import-from leaf|tinyid` (an incumbent's databases): registering many entities at once. */
import type { Command } from 'commander';
import { type CliContext, nonNegativeInt, repeatable } from './context';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './errors';
import { importEntities } from './import';
import { type ImportPlan, type Incumbent, named, parseRenames, planImport, runImport } from './import-from';
import { readAll } from './incumbent-rows';
import { finishCommand } from './cutover';

export function addImport(group: Command, ctx: CliContext): void {
  group
    .command('import')
    .description(
      'register every entity of a JSON-lines file (one POST /admin/apps body per line); secrets go to --secrets',
    )
    .argument('<file>', 'JSON lines, e.g. {"key": "orders", "step": 1000}')
    .requiredOption(
      '--secrets <path>',
      'file to create (mode 0600, never overwritten) with one {"key","secret"} line per registered entity',
    )
    .option('--concurrency <n>', 'requests in flight at once', nonNegativeInt, 8)
    .action(async (file: string, opts: { secrets: string; concurrency: number }, cmd: Command) => {
      const { registered, lines, failures, exitCode } = await importEntities(
        ctx.admin(cmd),
        { file, secretsPath: opts.secrets, concurrency: opts.concurrency },
        (f) => ctx.note(cmd, `line ${f.line}: ${f.error}`),
      );
      const json = {
        registered,
        lines,
        secrets: opts.secrets,
        failures: failures.map(({ line, error }) => ({ line, error })),
      };
      ctx.print(cmd, json, () => `registered ${registered} of ${lines} entities; secrets in ${opts.secrets}\n`);
      if (exitCode !== EXIT_OK)
        throw new CliError(exitCode, `${failures.length} of ${lines} lines failed (listed above)`);
    });
}

/** `apps import-from leaf|tinyid`: one entity per row of the incumbent's table (docs/migrating.md). */
export function addImportFrom(group: Command, ctx: CliContext): void {
  group
    .command('import-from')
    .description("register one entity per row of Leaf's leaf_alloc or Tinyid's tiny_id_info (stop the incumbent first)")
    .argument('<incumbent>', 'leaf or tinyid')
    .requiredOption(
      '--database-url <url>',
      "the incumbent's database (mysql://, mariadb://, postgres://); repeat for several Tinyid databases: the highest max_id wins",
      repeatable,
    )
    .option(
      '--only <keys>',
      'import only these keys (comma-separated; repeatable)',
      (value: string, previous?: string[]) => [...(previous ?? []), ...value.split(',').map((k) => k.trim())],
    )
    .option(
      '--key <TAG=KEY>',
      "import a tag that does not fit idpool's keys (order:v2) under KEY; Leaf's and Tinyid's routes still answer the tag (repeatable)",
      repeatable,
    )
    .option('--dry-run', 'print the plan; register nothing')
    .option(
      '--live',
      "register the entities in a live cutover: their segments come from the incumbent's rows, which it keeps advancing too",
    )
    .option('--finish', "once the incumbent is stopped: move every live entity onto idpool's own table above its row")
    .option(
      '--observe-seconds <s>',
      '--finish: how long each row must move only by what idpool reserves',
      nonNegativeInt,
      10,
    )
    .option('--secrets <path>', 'file to create (mode 0600) with the secrets made for entities that got no token')
    .action((kind: string, opts: ImportFromOptions, cmd: Command) => importFrom(ctx, kind, opts, cmd));
}

interface ImportFromOptions {
  databaseUrl: string[];
  only?: string[];
  key?: string[];
  dryRun?: boolean;
  secrets?: string;
  live?: boolean;
  finish?: boolean;
  observeSeconds: number;
}

/** `apps import-from`'s run: --finish, or the plan (printed alone with --dry-run), then the registrations and what they found. */
async function importFrom(ctx: CliContext, kind: string, opts: ImportFromOptions, cmd: Command): Promise<void> {
  if (kind !== 'leaf' && kind !== 'tinyid')
    throw new CliError(EXIT_USAGE, `import-from takes leaf or tinyid, got "${kind}"`);
  if (opts.live && opts.finish)
    throw new CliError(EXIT_USAGE, 'give --live (start a cutover) or --finish (end it), not both');
  if (opts.finish) return finishCommand(ctx, cmd, kind, opts);
  if (opts.live && opts.databaseUrl.length > 1)
    throw new CliError(
      EXIT_USAGE,
      '--live reserves from one database: give one --database-url (the one IDPOOL_*_DATABASE_URL names)',
    );
  const rows = await readAll(kind, opts.databaseUrl);
  const plan = planImport(kind, rows, opts.only ? new Set(opts.only) : undefined, parseRenames(opts.key ?? [], rows));
  const planned = plan.entities.map((e) => ({
    ...named(e),
    mode: e.body.mode,
    step: e.body.step,
    ...(e.body.delta !== undefined ? { delta: e.body.delta, remainder: e.body.remainder } : {}),
    tokens: e.tokens.length,
    notes: e.notes,
  }));
  for (const s of plan.skipped) ctx.note(cmd, `skipped ${JSON.stringify(s.key)}: ${s.reason}`);
  for (const e of plan.entities) for (const note of e.notes) ctx.note(cmd, `${e.key}: ${note}`);
  if (opts.dryRun) {
    ctx.print(cmd, { dryRun: true, entities: planned, skipped: plan.skipped }, () => dryRunText(kind, plan));
    // The exit code the real run would end with for the same rows.
    if (plan.skipped.length > 0)
      throw new CliError(
        EXIT_USAGE,
        `${plan.skipped.length} rows would be skipped (listed above); the rest would be imported (dry run)`,
      );
    return;
  }
  const { outcomes, moved } = await runImport(ctx.admin(cmd), plan, () => readAll(kind, opts.databaseUrl), {
    live: opts.live,
    secretsPath: opts.secrets,
    onOutcome: (o) =>
      ctx.globals(cmd).json !== true &&
      ctx.io.stdout(
        `${o.status === 'registered' ? 'registered' : 'exists    '} ${o.key}${o.tag === undefined ? '' : ` (${kind} tag ${JSON.stringify(o.tag)})`}: first id ${o.firstId}${o.raised ? ' (it started below: raised to it, its pool discarded)' : ''}${o.live === true ? ', live' : o.live === false ? ', NOT live (registered before, left as it is)' : ''}${o.secretsAdded ? `, ${o.secretsAdded} token(s) added as secrets` : ''}\n`,
      ),
  });
  const notes = plan.entities.flatMap((e) => e.notes.map((note) => ({ key: e.key, note })));
  const count = (status: string) => outcomes.filter((o) => o.status === status).length;
  ctx.print(
    cmd,
    { entities: outcomes, skipped: plan.skipped, notes, moved },
    () => `${count('registered')} registered, ${count('exists')} existed, ${plan.skipped.length} skipped\n`,
  );
  if (moved.length > 0)
    throw new CliError(
      EXIT_FAILURE,
      `rows moved while importing (the incumbent is still issuing ids): ${moved.map((m) => `${m.key} (max_id ${m.before} -> ${m.after})`).join(', ')}; those entities are held (served on no route); stop every instance of it, then run idpool apps release KEY --database-url URL for each, or this import again (docs/migrating.md "If a row moved")`,
    );
  if (plan.skipped.length > 0)
    throw new CliError(EXIT_USAGE, `${plan.skipped.length} rows skipped (listed above); the rest were imported`);
}

function dryRunText(kind: Incumbent, plan: ImportPlan): string {
  const lines = plan.entities.map((e) => {
    const body = e.body as { mode: string; step?: number; delta?: number; remainder?: number };
    const spacing = body.delta !== undefined ? `, delta ${body.delta} remainder ${body.remainder ?? 0}` : '';
    const face = kind === 'leaf' ? ', served on Leaf routes' : `, ${e.tokens.length} token(s) as secrets`;
    const tag = e.tag === e.key ? '' : ` (${kind} tag ${JSON.stringify(e.tag)})`;
    return `would register ${e.key}${tag}: first id ${e.firstId} (max_id ${e.maxId}), ${body.mode}, step ${body.step ?? 'default'}${spacing}${face}\n`;
  });
  return `${lines.join('')}${plan.entities.length} to register, ${plan.skipped.length} skipped (dry run: nothing registered)\n`;
}
