import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/config';
import { IdpoolError, errorMessage } from '../errors';
import { addEntityCommands } from './entity-commands';
import { type CliIo, cliContext, nonNegativeInt } from './context';
import { addDecodeCommand } from './decode-command';
import { addRedisAclCommand } from './redis-acl-command';
import { idpoolVersion } from '../version';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, oneLine } from './errors';
import { addServiceCommands } from './service-commands';
import { addTakeCommand } from './take-command';
import { addNumbersCommand } from './numbers-command';
import { addWorkersCommand } from './workers-command';

/** `idpool …`: parses `argv` (without `node` and the script), runs the command, returns the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT_OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end normally; anything else commander reports (already written) is a usage error.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT_OK;
      // A command group without its command: one line instead of the whole help.
      if (err.code === 'commander.help') io.stderr(`idpool: a command is missing; add --help to see the commands\n`);
      return EXIT_USAGE;
    }
    const failure = toCliError(err);
    io.stderr(`idpool: ${oneLine(failure.message)}\n`);
    return failure.exitCode;
  }
}

function toCliError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof ConfigError) return new CliError(EXIT_USAGE, `invalid configuration: ${err.message}`);
  if (err instanceof IdpoolError && err.statusCode === 400) return new CliError(EXIT_USAGE, err.message);
  return new CliError(EXIT_FAILURE, errorMessage(err));
}

/** The `idpool` program: global options, help and output wired to `io`, then each command group. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('idpool');
  program
    .description(
      'idpool: unique, increasing 64-bit ids over HTTP. Run the service, migrate its database, manage entities, take ids, decode snowflake ids, print Redis ACL users.',
    )
    .version(idpoolVersion(), '-V, --version')
    .option('--url <url>', 'base URL of an idpool instance, for apps and workers (IDPOOL_URL)')
    .option('--json', 'print the JSON the service answers instead of text')
    .option('--timeout <ms>', 'how long to wait for the service', nonNegativeInt, 10_000)
    .addHelpText(
      'after',
      '\nEnvironment:\n  IDPOOL_URL          instance for apps/workers (default http://127.0.0.1:$IDPOOL_PORT, port 8080)\n  IDPOOL_ADMIN_TOKEN  admin token for apps/workers\n  IDPOOL_SECRET       the entity secret for take (else asked for on the terminal)\n  IDPOOL_*            service configuration for serve, migrate and decode (see the README)\n\nExit codes: 0 ok, 1 runtime or dependency failure, 2 usage or validation error.',
    )
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout(s),
      // Only help shown for a missing command comes here; runCli says it in one line instead.
      writeErr: () => undefined,
      outputError: (s) => io.stderr(`idpool: ${oneLine(s.replace(/^error: /, ''))}\n`),
    });

  const ctx = cliContext(io);
  addServiceCommands(program, ctx);
  addEntityCommands(program, ctx);
  addWorkersCommand(program, ctx);
  addTakeCommand(program, ctx);
  addNumbersCommand(program, ctx);
  addDecodeCommand(program, ctx);
  addRedisAclCommand(program, ctx);
  return program;
}
