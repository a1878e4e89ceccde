import { type Command, Option } from 'commander';
import { type CliContext, decimal, duration, nonNegativeInt } from './context';
import { CliError, EXIT_USAGE } from './errors';
import { entityPath } from './admin-api';
import { fields, table } from './format';
import type { Answer } from '../http/openapi/schemas';
import { PAGE_MAX } from '../http/params';
import { RESETS } from '../numbers/period';
import { addImport, addImportFrom } from './import-commands';
import { addRelease } from './cutover';

/** Options of `apps create` and `apps update`: each flag camel-cased is the admin API's field (`--max-pool-size`, `maxPoolSize`). */
const TUNABLES: [flag: string, what: string][] = [
  ['--step <n>', 'ids reserved per segment (default 1000)'],
  ['--max-size-per-times <n>', 'most ids per request (default 1000)'],
  ['--max-size-per-second <n>', 'ids per second over all callers; 0 = unlimited (default 5000)'],
  ['--min-size-percent <n>', 'refill when the pool falls below this % of its demand-sized target (default 80)'],
  [
    '--max-pool-size <n>',
    'most ids kept ready: the ceiling of the demand-sized target (default 60 × max-size-per-second)',
  ],
  ['--interval <ms>', 'least ms between two refill checks of this entity (default: the service refill tick)'],
];

/** What `apps create` sends besides the key, mode and tunables, where given (fixed once registered). */
const CREATE_FIELDS = ['startOffset', 'firstId', 'delta', 'remainder', 'format', 'reset', 'timeZone', 'gapless'];

function given(opts: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(fields.filter((f) => opts[f] !== undefined).map((f) => [f, opts[f]]));
}

/** The fields `apps create` and `apps update` share: the name, the protocols and the tunables. */
const pickTunables = (opts: Record<string, unknown>) =>
  given(opts, ['name', 'compat', ...TUNABLES.map(([flag]) => new Option(flag).attributeName())]);

function addTunables(command: Command): Command {
  command.option(
    '--compat <protocols>',
    'serve also without a credential through: leaf, or none (default none)',
    (v) => (v === 'none' ? [] : v.split(',').map((p) => p.trim())),
  );
  for (const [flag, what] of TUNABLES) command.option(flag, what, nonNegativeInt);
  return command;
}

/** `apps <name> <key>`: a command on one entity. */
const onEntity = (group: Command) => (name: string, description: string) =>
  group.command(name).description(description).argument('<key>', 'entity key');

/** `apps …`: register and manage entities through the admin API (`apps create`, `list` and the imports apart). */
export function addEntityCommands(program: Command, ctx: CliContext): void {
  const group = program.command('apps').description('register and manage entities (through the admin API)');
  addCreate(group, ctx);
  addList(group, ctx);
  addImport(group, ctx);
  addImportFrom(group, ctx);
  addRelease(group, ctx);
  const command = onEntity(group);
  command('show', "show one entity's configuration and pool").action(
    async (key: string, _opts: unknown, cmd: Command) => {
      const entity = await ctx.admin(cmd).get<Record<string, unknown>>(entityPath(key));
      ctx.print(cmd, entity, () => fields(entity));
    },
  );
  const update = command('update', "change an entity's name, step, sizes, limits or credential-free protocols");
  addTunables(update.option('--name <name>', 'display name')).action(
    async (key: string, opts: Record<string, unknown>, cmd: Command) => {
      const patch = pickTunables(opts);
      if (Object.keys(patch).length === 0)
        throw new CliError(
          EXIT_USAGE,
          `nothing to change: give at least one of --name, --compat, ${TUNABLES.map(([flag]) => flag.split(' ')[0]).join(', ')}`,
        );
      const entity = await ctx.admin(cmd).patch<Record<string, unknown>>(entityPath(key), patch);
      ctx.print(cmd, entity, () => fields(entity));
    },
  );
  command('retire', 'retire an entity for good: its ids are never issued again and its key is never reused')
    .option('--yes', 'confirm: retiring cannot be undone')
    .action(async (key: string, opts: { yes?: boolean }, cmd: Command) => {
      if (!opts.yes) throw new CliError(EXIT_USAGE, `retiring "${key}" cannot be undone; run again with --yes`);
      await ctx.admin(cmd).delete(entityPath(key));
      ctx.print(cmd, { key, retired: true }, () => `retired ${key}\n`);
    });
  addSecretCommands(command, ctx);
}

function addCreate(group: Command, ctx: CliContext): void {
  const create = group
    .command('create')
    .description('register an entity; prints its secret once')
    .argument('<key>', 'entity key: 1-64 of A-Z a-z 0-9 _ - .')
    .option('--name <name>', 'display name (default: the key)')
    .addOption(
      new Option('--mode <mode>', 'how ids are made').choices(['monotonic', 'trend', 'snowflake']).default('monotonic'),
    )
    .option('--start-offset <n>', 'first number of the line (default 0)', decimal)
    .option('--first-id <id>', 'lowest id to issue (instead of --start-offset; e.g. above an old service)', decimal)
    .option(
      '--delta <n>',
      'ids are the numbers ≡ remainder (mod delta); fixed once registered (default 1)',
      nonNegativeInt,
    )
    .option('--remainder <n>', 'see --delta (default 0)', nonNegativeInt)
    .option('--format <template>', 'business numbers: a template such as INV{yyyy}{MM}{dd}-{seq:6} (docs/numbers.md)')
    .addOption(
      new Option(
        '--reset <period>',
        'with --format: when the sequence restarts (default: the finest date token)',
      ).choices(RESETS),
    )
    .option(
      '--time-zone <zone>',
      'with --format: IANA name (Asia/Shanghai) or offset (+08:00) of the periods (default UTC)',
    )
    .option(
      '--gapless',
      'with --format: a gapless series, each number issued once in a ledger, none skipped (docs/numbers.md "Gapless series")',
    );
  addTunables(create).action(async (key: string, opts: Record<string, unknown>, cmd: Command) => {
    const body = {
      key,
      mode: opts.mode,
      ...given(opts, CREATE_FIELDS),
      ...pickTunables(opts),
    };
    const created = await ctx.admin(cmd).post<Record<string, unknown>>('/admin/apps', body);
    ctx.print(cmd, created, () => {
      const { secret, ...config } = created;
      return `${fields(config)}\nsecret: ${String(secret)}\nThe secret is shown only now; store it (rotate with: idpool apps rotate-secret ${key}).\n`;
    });
  });
}

function addList(group: Command, ctx: CliContext): void {
  group
    .command('list')
    .description('list live entities with their pools, in key order (every page unless --limit)')
    .option('--limit <n>', 'one page of at most n entities (1-1000) instead of all', nonNegativeInt)
    .option('--after <key>', 'start after this key (the "next" a page printed)')
    .action(async (opts: { limit?: number; after?: string }, cmd: Command) => {
      const { list, next } = await listPages(ctx, cmd, opts);
      const json = opts.limit === undefined ? { apps: list } : { apps: list, next };
      ctx.print(cmd, json, () => {
        const more = opts.limit !== undefined && next !== null ? `more after ${next} (add --after ${next})\n` : '';
        if (list.length === 0) return `no entities registered${opts.after ? ` after ${opts.after}` : ''}\n`;
        return (
          table(
            ['KEY', 'MODE', 'STEP', 'POOL', 'CURRENT OFFSET', 'PERIOD', 'NAME'],
            // A business-number entity (`period`) draws from its period's sequence: its pool is that period's ready
            // numbers, its line the period's use. A gapless series keeps no pool: its line is what its ledger issued.
            list.map(({ period: p, ...a }) => [
              a.key,
              p ? `number/${a.gapless ? 'gapless' : a.mode}` : a.mode,
              p || a.step === undefined ? '-' : String(a.step),
              a.pool && !(p && a.gapless) ? `${a.pool.size}/${a.pool.max}` : '-',
              p ? '-' : (a.currentOffset ?? '-'),
              p ? `${p.id} ${p.used}/${p.capacity} (${p.timeZone})` : '-',
              a.name,
            ]),
          ) + more
        );
      });
    });
}

/** Reads the entity list page by page after `opts.after`: one page with `opts.limit`, else until the last. */
export async function listPages(
  ctx: CliContext,
  cmd: Command,
  opts: { limit?: number; after?: string },
): Promise<{ list: Answer<'Entity'>[]; next: string | null }> {
  const api = ctx.admin(cmd);
  const list: Answer<'Entity'>[] = [];
  let after = opts.after;
  do {
    // Reading every page: the largest the API allows, for the fewest round trips.
    const query = new URLSearchParams({ limit: String(opts.limit ?? PAGE_MAX) });
    if (after !== undefined) query.set('after', after);
    const page = await api.get<Answer<'EntityPage'>>(`/admin/apps?${query.toString()}`);
    list.push(...page.apps);
    after = page.next ?? undefined;
  } while (after !== undefined && opts.limit === undefined);
  return { list, next: after ?? null };
}

/** `apps rotate-secret`, `add-secret`, `remove-secret`: one secret replaced, or more than one at once (a slow rollout, imported Tinyid tokens). */
function addSecretCommands(command: ReturnType<typeof onEntity>, ctx: CliContext): void {
  command('rotate-secret', "replace an entity's secret; the old one stops working at once, or after --keep-old-for")
    .option(
      '--keep-old-for <duration>',
      'keep accepting the old secrets this long (90s, 30m, 12h, 7d; at most 30d) while clients move over',
      duration,
    )
    .action(async (key: string, opts: { keepOldFor?: number }, cmd: Command) => {
      const { secret } = await ctx
        .admin(cmd)
        .post<{ secret: string }>(`${entityPath(key)}/secret`, { keepOldForSeconds: opts.keepOldFor });
      const old = opts.keepOldFor ? `the old one works for ${opts.keepOldFor} s more` : 'the old one no longer works';
      ctx.print(cmd, { key, secret }, () => `secret: ${secret}\nThe secret is shown only now; ${old}.\n`);
    });
  command('add-secret', 'accept one more secret (made here and printed once, or given with --secret)')
    .option('--secret <secret>', 'accept this secret (16-256 printable ASCII characters) instead of a new one')
    .option('--expires-in <duration>', 'stop accepting it after this long (90s, 30m, 12h, 7d)', duration)
    .action(async (key: string, opts: { secret?: string; expiresIn?: number }, cmd: Command) => {
      // JSON leaves out what was not given.
      const body = { secret: opts.secret, expiresInSeconds: opts.expiresIn };
      const added = await ctx.admin(cmd).post<Answer<'AddedSecret'>>(`${entityPath(key)}/secrets`, body);
      const secret = added.secret ? `secret: ${added.secret}\nThe secret is shown only now.\n` : '';
      ctx.print(cmd, { key, ...added }, () => `id: ${added.id}\n${secret}`);
    });
  command('remove-secret', 'stop accepting one secret (its id is listed by apps show); the last one cannot be removed')
    .argument('<id>', 'secret id')
    .action(async (key: string, id: string, _opts: unknown, cmd: Command) => {
      await ctx.admin(cmd).delete(`${entityPath(key)}/secrets/${encodeURIComponent(id)}`);
      ctx.print(cmd, { key, id, removed: true }, () => `removed secret ${id} of ${key}\n`);
    });
}
