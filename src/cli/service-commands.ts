import type { Command } from 'commander';
import { DATABASE_URL_VARIABLE, loadConfig } from '../config/config';
import { type CliContext, nonNegativeInt } from './context';
import { CliError, EXIT_FAILURE } from './errors';
import { DEFAULT_DATABASE_URL } from '../db/database-url';

/** `serve` and `migrate`: the commands that run against the service's own configuration, not its API. */
export function addServiceCommands(program: Command, ctx: CliContext): void {
  program
    .command('serve')
    .description('run the service (same as npm start); configured by IDPOOL_* variables')
    .option('--port <port>', 'HTTP port (IDPOOL_PORT)', nonNegativeInt)
    .action((opts: { port?: number }) => ctx.io.serve({ port: opts.port }));

  program
    .command('migrate')
    .description('create or upgrade the database schema of IDPOOL_DATABASE_URL')
    .option('--database-url <url>', `database to migrate (default IDPOOL_DATABASE_URL, else ${DEFAULT_DATABASE_URL})`)
    .action(async (opts: { databaseUrl?: string }, cmd: Command) => migrate(ctx, cmd, opts.databaseUrl));
}

/** `idpool migrate`: the same locked run as a starting service, so `migrate` beside starting instances is safe. */
async function migrate(ctx: CliContext, cmd: Command, databaseUrl: string | undefined): Promise<void> {
  const config = loadConfig({ ...ctx.io.env, ...(databaseUrl ? { IDPOOL_DATABASE_URL: databaseUrl } : {}) });
  // Loaded here, not at start: TypeORM takes a while to load and only migrate needs it.
  const { openDatabase, migrate: migrateDatabase } = await import('../db/database');
  const urlSource = databaseUrl ? '--database-url' : DATABASE_URL_VARIABLE;
  const db = await openDatabase(config.databaseUrl, { migrate: false, urlSource }).catch((err: unknown) => {
    // The message names the database, the flag or variable its URL came from, and the cause (db/start-error.ts).
    throw new CliError(EXIT_FAILURE, `cannot open the ${(err as Error).message}`);
  });
  try {
    const names = await migrateDatabase(db);
    ctx.print(cmd, { database: db.description, applied: names }, () =>
      names.length ? `${db.description}: applied ${names.join(', ')}\n` : `${db.description}: schema is up to date\n`,
    );
  } finally {
    await db.close();
  }
}
