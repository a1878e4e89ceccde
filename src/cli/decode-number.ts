/**
 * `idpool decode` of a business number: template, reset and zone from `--format` (offline) or the issuing
 * instance (admin token). A number does not carry its zone, so a zone the user did not give is said aloud.
 */
import type { Command } from 'commander';
import { type DecodedNumber, NumberScheme, type NumberSettings } from '../numbers/scheme';
import { NumberSettingsError } from '../numbers/template';
import type { CliContext } from './context';
import { CliError, EXIT_USAGE } from './errors';
import { fields } from './format';
import { listPages } from './entity-commands';

/** What a business number's decode was given: `--format` and its companions, or nothing (then the instance is asked). */
export type NumberInput = Partial<Record<keyof NumberSettings, string>>;

/** What decode needs of an entity from `GET /admin/apps`. */
export interface DecodableEntity extends NumberInput {
  key: string;
  mode: string;
}

/** The hint when nothing names a number's template: the flags, and how the instance could have. */
const HINT =
  'to decode a business number give --format <template> (and --time-zone <zone>, else UTC is assumed), or let idpool ask the instance: IDPOOL_ADMIN_TOKEN and --url or IDPOOL_URL, and --app <key>';

/** `idpool decode <number> --format …`: a business number's period and sequence, from the template alone. */
export function decodeWithFormat(ctx: CliContext, cmd: Command, number: string, input: NumberInput): void {
  const decoded = decodeOrThrow(number, input);
  if (input.timeZone === undefined && decoded.reset !== 'never')
    ctx.io.stderr(
      `idpool: note: no --time-zone: the period ${decoded.period} is read in UTC; give the entity's zone (or --app <key> to ask the instance)\n`,
    );
  ctx.print(cmd, decoded, () => fields({ ...decoded }));
}

/** `idpool decode <number> --app KEY`: decoded with the template and zone the instance has for the entity. */
export function decodeForEntity(ctx: CliContext, cmd: Command, number: string, entity: DecodableEntity): void {
  if (entity.format === undefined)
    throw new CliError(
      EXIT_USAGE,
      `entity "${entity.key}" issues ${entity.mode} segment ids: they carry nothing to decode (an id is its own value)`,
    );
  printForEntity(ctx, cmd, entity, decodeOrThrow(number, entity));
}

/** `idpool decode <number>` alone: the instance's number entities whose template reads it (several: `--app`). */
export async function decodeByLookup(ctx: CliContext, cmd: Command, number: string): Promise<void> {
  if (!ctx.io.env.IDPOOL_ADMIN_TOKEN)
    throw new CliError(EXIT_USAGE, `"${number}" is not a snowflake id (not a decimal integer); ${HINT}`);
  let entities: DecodableEntity[];
  try {
    entities = (await listPages(ctx, cmd, {})).list;
  } catch (err) {
    if (err instanceof CliError) throw new CliError(err.exitCode, `${err.message}; ${HINT}`, err.unreachable);
    throw err;
  }
  const readers = entities.flatMap((entity) => {
    const decoded = entity.format !== undefined && scheme(entity).decode(number);
    return decoded ? [{ entity, decoded }] : [];
  });
  if (readers.length === 0)
    throw new CliError(
      EXIT_USAGE,
      `"${number}" is not a snowflake id, nor a number of any business-number entity of the instance; give --format <template> (and --time-zone <zone>)`,
    );
  if (readers.length > 1)
    throw new CliError(
      EXIT_USAGE,
      `"${number}" reads as a number of ${readers.map((r) => r.entity.key).join(', ')}: name one with --app <key>`,
    );
  printForEntity(ctx, cmd, readers[0].entity, readers[0].decoded);
}

function printForEntity(ctx: CliContext, cmd: Command, entity: DecodableEntity, decoded: DecodedNumber): void {
  ctx.print(cmd, decoded, () => fields({ entity: entity.key, ...decoded }));
}

/** The scheme of `input`, checked (a stored entity's too): a broken one is a usage error. */
function scheme(input: NumberInput): NumberScheme {
  try {
    return NumberScheme.of(NumberScheme.settings({ ...input, format: input.format ?? '' }));
  } catch (err) {
    throw err instanceof NumberSettingsError ? new CliError(EXIT_USAGE, err.message) : err;
  }
}

function decodeOrThrow(number: string, input: NumberInput): DecodedNumber {
  const decoding = scheme(input);
  const decoded = decoding.decode(number);
  if (decoded) return decoded;
  const { format, timeZone } = decoding.settings;
  throw new CliError(EXIT_USAGE, `"${number}" is not a number of ${format} (or names no period of ${timeZone})`);
}
