import type { Command } from 'commander';
import { KEY_PATTERN } from '../entities/entity';
import type { AdminApi } from './admin-api';
import { type CliContext, nonNegativeInt } from './context';
import { CliError, EXIT_USAGE } from './errors';

/** The API of the instance `--url` names, with the entity's secret (IDPOOL_SECRET, else asked for on the terminal). */
export async function secretApi(ctx: CliContext, cmd: Command, key: string): Promise<AdminApi> {
  if (!KEY_PATTERN.test(key)) throw new CliError(EXIT_USAGE, `"${key}" is not an entity key`);
  const secret = ctx.io.env.IDPOOL_SECRET || (await ctx.io.askSecret?.(`secret of ${key}: `));
  if (!secret)
    throw new CliError(
      EXIT_USAGE,
      `IDPOOL_SECRET is not set and there is no terminal to ask on: export the secret of "${key}"`,
    );
  return ctx.api(cmd, secret, { name: `the secret of ${key}`, variable: 'IDPOOL_SECRET' });
}

export function addTakeCommand(program: Command, ctx: CliContext): void {
  program
    .command('take')
    .description(
      "take ids of an entity from a running instance, with the entity's secret (IDPOOL_SECRET, else asked for)",
    )
    .argument('<key>', 'the entity key')
    .option('--count <n>', "how many (1 to the entity's maxSizePerTimes)", nonNegativeInt)
    .option('--reference <text>', "a gapless series only: the caller's reference kept in the ledger (an invoice's id)")
    .action(async (key: string, opts: { count?: number; reference?: string }, cmd: Command) => {
      const api = await secretApi(ctx, cmd, key);
      const taken = await api.post<{ ids: string[] }>(`/apps/${encodeURIComponent(key)}/ids`, {
        count: opts.count ?? 1,
        reference: opts.reference,
      });
      ctx.print(cmd, taken, () => `${taken.ids.join('\n')}\n`);
    });
}
