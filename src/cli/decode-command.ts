import { type Command, Option } from 'commander';
import { systemClock } from '../clock';
import { loadConfig } from '../config/config';
import { entityPath } from './admin-api';
import type { CliContext } from './context';
import { CliError, EXIT_USAGE } from './errors';
import { fields } from './format';
import { type DecodableEntity, decodeByLookup, decodeForEntity, decodeWithFormat } from './decode-number';

/** Each layout option of `decode`: its flag, the variable it stands in for, and what its help says besides. */
const LAYOUT: readonly (readonly [flags: string, variable: string, more?: string])[] = [
  ['--time-unit <unit>', 'IDPOOL_SNOWFLAKE_TIME_UNIT'],
  ['--epoch <date>', 'IDPOOL_SNOWFLAKE_EPOCH', ': ISO date or Unix ms'],
  ['--timestamp-bits <n>', 'IDPOOL_SNOWFLAKE_TIMESTAMP_BITS'],
  ['--worker-bits <n>', 'IDPOOL_SNOWFLAKE_WORKER_BITS'],
  ['--reserved-bits <n>', 'IDPOOL_SNOWFLAKE_RESERVED_BITS'],
  ['--reserved-value <n>', 'IDPOOL_SNOWFLAKE_RESERVED_VALUE'],
  [
    '--region-bits <n>',
    'IDPOOL_SNOWFLAKE_REGION_BITS',
    ' (the region of an id is read from it, whatever IDPOOL_REGION says)',
  ],
];

export function addDecodeCommand(program: Command, ctx: CliContext): void {
  const command = program
    .command('decode')
    .description(
      "explain a snowflake id with the layout of IDPOOL_SNOWFLAKE_* (or the options below), offline; a business number with --format, or with its entity's template and zone asked of the instance (--app, or any entity whose template reads it, with IDPOOL_ADMIN_TOKEN)",
    )
    .argument('<id>', 'a snowflake id (decimal), or a business number')
    .option(
      '--app <key>',
      'the entity that issued it: its format, reset and zone asked of the instance (--url or IDPOOL_URL, IDPOOL_ADMIN_TOKEN)',
    )
    .option('--format <template>', 'decode a business number of this template offline (docs/numbers.md)')
    .option('--reset <period>', 'with --format: the entity reset (default: the finest date token)')
    .option('--time-zone <zone>', 'with --format: the entity time zone (default UTC, said on stderr)');
  for (const [flags, variable, more = ''] of LAYOUT) {
    const option = new Option(flags, variable + more);
    command.addOption(flags.startsWith('--time-unit') ? option.choices(['ms', 's', 'min', 'h', 'd']) : option);
  }
  command.action(async (id: string, opts: Record<string, string | undefined>, cmd: Command) => {
    if (opts.app !== undefined && opts.format !== undefined)
      throw new CliError(EXIT_USAGE, '--app and --format both name a template: give one (--app asks the instance)');
    const loose = ['--reset', '--time-zone'].find((flag) => opts[new Option(flag).attributeName()] !== undefined);
    if (loose && opts.format === undefined)
      throw new CliError(EXIT_USAGE, `${loose} goes with --format (with --app the instance names the entity's)`);
    if (opts.format !== undefined) {
      decodeWithFormat(ctx, cmd, id, { format: opts.format, reset: opts.reset, timeZone: opts.timeZone });
      return;
    }
    if (opts.app !== undefined) {
      const entity = await ctx.admin(cmd).get<DecodableEntity>(entityPath(opts.app));
      // A snowflake entity's ids are read with the layout of the environment, as without --app.
      if (entity.mode !== 'snowflake') {
        decodeForEntity(ctx, cmd, id, entity);
        return;
      }
    } else if (!/^\d+$/.test(id)) {
      // Not a decimal integer, so not a snowflake id: taken for a business number.
      await decodeByLookup(ctx, cmd, id);
      return;
    }
    const overrides: Record<string, string> = {};
    for (const [flags, variable] of LAYOUT) {
      const value = opts[new Option(flags).attributeName()];
      if (value !== undefined) overrides[variable] = value;
    }
    // The same validation (and messages) as the service's start-up.
    const config = loadConfig({ ...ctx.io.env, ...overrides });
    const { SnowflakeLayout } = await import('../snowflake/layout');
    const { explainId, NotAnIdError } = await import('../snowflake/explain');
    const layout = SnowflakeLayout.create(config.snowflake, systemClock.now());
    let parts;
    try {
      parts = explainId(layout, systemClock.now(), id);
    } catch (err) {
      throw err instanceof NotAnIdError ? new CliError(EXIT_USAGE, err.message) : err;
    }
    ctx.print(cmd, parts, () => fields({ ...parts, layout: layout.describe() }));
  });
}
