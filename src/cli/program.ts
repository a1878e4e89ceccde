import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { systemClock } from '../clock';
import { ConfigError, loadConfig } from '../config/config';
import { IdpoolError } from '../errors';
import { AdminApi } from './admin-api';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, oneLine } from './errors';
import { importApps } from './import';
import { fields, table } from './format';

export interface CliIo {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Starts the service in this process (`idpool serve`); resolves once it was handed control. */
  serve(): Promise<void>;
}

interface GlobalOptions {
  url?: string;
  json?: boolean;
  timeout: number;
}

const nonNegativeInt = (value: string): number => {
  if (!/^\d{1,15}$/.test(value)) throw new InvalidArgumentError('must be a non-negative integer.');
  return Number(value);
};

const decimal = (value: string): string => {
  if (!/^\d{1,19}$/.test(value)) throw new InvalidArgumentError('must be a non-negative decimal integer.');
  return value;
};

/** Page size `apps list` asks for when reading every page: the largest the API allows (fewest round trips). */
const LIST_PAGE = 1000;

/** Options of `apps create` and `apps update`, as the admin API names the fields. */
const TUNABLES: { flag: string; field: string; what: string }[] = [
  { flag: '--step <n>', field: 'step', what: 'ids reserved per segment (default 1000)' },
  { flag: '--max-size-per-times <n>', field: 'maxSizePerTimes', what: 'most ids per request (default 1000)' },
  { flag: '--max-size-per-second <n>', field: 'maxSizePerSecond', what: 'ids per second over all callers; 0 = unlimited (default 5000)' },
  { flag: '--min-size-percent <n>', field: 'minSizePercent', what: 'refill when the pool falls below this % of its max (default 80)' },
  { flag: '--max-pool-size <n>', field: 'maxPoolSize', what: 'ids kept ready (default 60 × max-size-per-second)' },
  { flag: '--interval <ms>', field: 'interval', what: 'least ms between two refill checks of this entity (default: the service refill tick)' },
];

function packageVersion(): string {
  // src/cli under tsx, dist/src/cli when built: walk up to the package.
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}

/** The fields given on the command line (commander camel-cases `--max-pool-size` to `maxPoolSize`). */
function pickTunables(opts: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (opts.name !== undefined) body.name = opts.name;
  for (const { field } of TUNABLES) if (opts[field] !== undefined) body[field] = opts[field];
  return body;
}

/** `idpool …`: parses `argv` (without `node` and the script), runs the command, returns the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT_OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end the run normally; everything else commander
      // reports (already written, as one line) is a usage error.
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
  return new CliError(EXIT_FAILURE, String((err as Error)?.message ?? err));
}

function buildProgram(io: CliIo): Command {
  const program = new Command('idpool');
  program
    .description('idpool: unique, increasing 64-bit ids over HTTP. Run the service, migrate its database, manage entities, decode snowflake ids.')
    .version(packageVersion(), '-V, --version')
    .option('--url <url>', 'base URL of an idpool instance, for apps and workers (IDPOOL_URL)')
    .option('--json', 'print the JSON the service answers instead of text')
    .addOption(new Option('--timeout <ms>', 'how long to wait for the service').argParser(nonNegativeInt).default(10_000))
    .addHelpText(
      'after',
      '\nEnvironment:\n  IDPOOL_URL          instance for apps/workers (default http://127.0.0.1:$IDPOOL_PORT, port 8080)\n  IDPOOL_ADMIN_TOKEN  admin token for apps/workers\n  IDPOOL_*            service configuration for serve, migrate and decode (see the README)\n\nExit codes: 0 ok, 1 runtime or dependency failure, 2 usage or validation error.',
    )
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout(s),
      // Only help shown for a missing command comes here; runCli says it in one line instead.
      writeErr: () => undefined,
      outputError: (s) => io.stderr(`idpool: ${oneLine(s.replace(/^error: /, ''))}\n`),
    });

  const globals = (cmd: Command) => cmd.optsWithGlobals<GlobalOptions>();
  const print = (cmd: Command, json: unknown, text: () => string) => io.stdout(globals(cmd).json ? `${JSON.stringify(json, null, 2)}\n` : text());
  const admin = (cmd: Command) => {
    const token = io.env.IDPOOL_ADMIN_TOKEN;
    if (!token) throw new CliError(EXIT_USAGE, 'IDPOOL_ADMIN_TOKEN is not set: export the admin token of the service');
    const g = globals(cmd);
    const url = g.url || io.env.IDPOOL_URL || `http://127.0.0.1:${io.env.IDPOOL_PORT || 8080}`;
    return new AdminApi({ url, token, timeoutMs: g.timeout });
  };

  program
    .command('serve')
    .description('run the service (same as npm start); configured by IDPOOL_* variables')
    .addOption(new Option('--port <port>', 'HTTP port (IDPOOL_PORT)').argParser(nonNegativeInt))
    .action(async (opts: { port?: number }) => {
      if (opts.port !== undefined) io.env.IDPOOL_PORT = String(opts.port);
      await io.serve();
    });

  program
    .command('migrate')
    .description('create or upgrade the database schema of IDPOOL_DATABASE_URL')
    .option('--database-url <url>', 'database to migrate (default IDPOOL_DATABASE_URL, else sqlite:./idpool.db)')
    .action(async (opts: { databaseUrl?: string }, cmd: Command) => {
      const config = loadConfig({ ...io.env, ...(opts.databaseUrl ? { IDPOOL_DATABASE_URL: opts.databaseUrl } : {}) });
      // Loaded here, not at start: TypeORM takes a while to load and only migrate needs it.
      const { openDatabase, migrate } = await import('../db/database');
      let db;
      try {
        db = await openDatabase(config.databaseUrl, { migrate: false });
      } catch (err) {
        throw new CliError(EXIT_FAILURE, `cannot open the database (${config.databaseUrl.replace(/\/\/[^@/]*@/, '//***@')}): ${(err as Error).message}`);
      }
      try {
        // The same locked run as a starting service, so `migrate` beside starting instances is safe.
        const names = await migrate(db);
        print(cmd, { database: db.description, applied: names }, () =>
          names.length ? `${db.description}: applied ${names.join(', ')}\n` : `${db.description}: schema is up to date\n`,
        );
      } finally {
        await db.close();
      }
    });

  const apps = program.command('apps').description('register and manage entities (through the admin API)');

  const create = apps
    .command('create')
    .description('register an entity; prints its secret once')
    .argument('<key>', 'entity key: 1-64 of A-Z a-z 0-9 _ - .')
    .option('--name <name>', 'display name (default: the key)')
    .addOption(new Option('--mode <mode>', 'how ids are made').choices(['monotonic', 'trend', 'snowflake']).default('monotonic'))
    .addOption(new Option('--start-offset <n>', 'first id of the number line (default 0)').argParser(decimal));
  for (const t of TUNABLES) create.addOption(new Option(t.flag, t.what).argParser(nonNegativeInt));
  create.action(async (key: string, opts: Record<string, unknown>, cmd: Command) => {
    const body = { key, mode: opts.mode, ...(opts.startOffset !== undefined ? { startOffset: opts.startOffset } : {}), ...pickTunables(opts) };
    const created = await admin(cmd).post<Record<string, unknown>>('/admin/apps', body);
    print(cmd, created, () => {
      const { secret, ...config } = created;
      return `${fields(config)}\nsecret: ${secret}\nThe secret is shown only now; store it (rotate with: idpool apps rotate-secret ${key}).\n`;
    });
  });

  apps
    .command('list')
    .description('list live entities with their pools, in key order (every page unless --limit)')
    .addOption(new Option('--limit <n>', 'one page of at most n entities (1-1000) instead of all').argParser(nonNegativeInt))
    .option('--after <key>', 'start after this key (the "next" a page printed)')
    .action(async (opts: { limit?: number; after?: string }, cmd: Command) => {
      const api = admin(cmd);
      const list: Record<string, any>[] = [];
      let after = opts.after;
      let next: string | null = null;
      do {
        const query = new URLSearchParams({ limit: String(opts.limit ?? LIST_PAGE) });
        if (after !== undefined) query.set('after', after);
        const page = await api.get<{ apps: Record<string, any>[]; next: string | null }>(`/admin/apps?${query}`);
        list.push(...page.apps);
        next = page.next;
        after = next ?? undefined;
      } while (next !== null && opts.limit === undefined);
      const json = opts.limit === undefined ? { apps: list } : { apps: list, next };
      print(cmd, json, () => {
        const more = opts.limit !== undefined && next !== null ? `more after ${next} (add --after ${next})\n` : '';
        if (list.length === 0) return `no entities registered${opts.after ? ` after ${opts.after}` : ''}\n`;
        return (
          table(
            ['KEY', 'MODE', 'STEP', 'POOL', 'CURRENT OFFSET', 'NAME'],
            list.map((a) => [a.key, a.mode, String(a.step), a.pool ? `${a.pool.size}/${a.pool.max}` : '-', a.currentOffset ?? '-', a.name]),
          ) + more
        );
      });
    });

  apps
    .command('import')
    .description('register every entity of a JSON-lines file (one POST /admin/apps body per line); secrets go to --secrets')
    .argument('<file>', 'JSON lines, e.g. {"key": "orders", "step": 1000}')
    .requiredOption('--secrets <path>', 'file to create (mode 0600, never overwritten) with one {"key","secret"} line per registered entity')
    .addOption(new Option('--concurrency <n>', 'requests in flight at once').argParser(nonNegativeInt).default(8))
    .action(async (file: string, opts: { secrets: string; concurrency: number }, cmd: Command) => {
      const api = admin(cmd);
      const result = await importApps(api, { file, secretsPath: opts.secrets, concurrency: opts.concurrency }, (f) => {
        if (!globals(cmd).json) io.stderr(`idpool: line ${f.line}: ${f.error}\n`);
      });
      const summary = `registered ${result.registered} of ${result.lines} entities; secrets in ${opts.secrets}`;
      print(cmd, { registered: result.registered, lines: result.lines, secrets: opts.secrets, failures: result.failures.map(({ line, error }) => ({ line, error })) }, () => `${summary}\n`);
      if (result.exitCode !== EXIT_OK) throw new CliError(result.exitCode as 1 | 2, `${result.failures.length} of ${result.lines} lines failed (listed above)`);
    });

  apps
    .command('show')
    .description("show one entity's configuration and pool")
    .argument('<key>', 'entity key')
    .action(async (key: string, _opts: unknown, cmd: Command) => {
      const app = await admin(cmd).get<Record<string, unknown>>(`/admin/apps/${encodeURIComponent(key)}`);
      print(cmd, app, () => fields(app));
    });

  const update = apps
    .command('update')
    .description("change an entity's name, step, sizes or limits")
    .argument('<key>', 'entity key')
    .option('--name <name>', 'display name');
  for (const t of TUNABLES) update.addOption(new Option(t.flag, t.what).argParser(nonNegativeInt));
  update.action(async (key: string, opts: Record<string, unknown>, cmd: Command) => {
    const patch = pickTunables(opts);
    if (Object.keys(patch).length === 0) throw new CliError(EXIT_USAGE, `nothing to change: give at least one of --name, ${TUNABLES.map((t) => t.flag.split(' ')[0]).join(', ')}`);
    const app = await admin(cmd).patch<Record<string, unknown>>(`/admin/apps/${encodeURIComponent(key)}`, patch);
    print(cmd, app, () => fields(app));
  });

  apps
    .command('retire')
    .description('retire an entity for good: its ids are never issued again and its key is never reused')
    .argument('<key>', 'entity key')
    .option('--yes', 'confirm: retiring cannot be undone')
    .action(async (key: string, opts: { yes?: boolean }, cmd: Command) => {
      if (!opts.yes) throw new CliError(EXIT_USAGE, `retiring "${key}" cannot be undone; run again with --yes`);
      await admin(cmd).delete(`/admin/apps/${encodeURIComponent(key)}`);
      print(cmd, { key, retired: true }, () => `retired ${key}\n`);
    });

  apps
    .command('rotate-secret')
    .description("replace an entity's secret; the old one stops working at once")
    .argument('<key>', 'entity key')
    .action(async (key: string, _opts: unknown, cmd: Command) => {
      const { secret } = await admin(cmd).post<{ secret: string }>(`/admin/apps/${encodeURIComponent(key)}/secret`);
      print(cmd, { key, secret }, () => `secret: ${secret}\nThe secret is shown only now; the old one no longer works.\n`);
    });

  program
    .command('workers')
    .description('show snowflake worker-id leases')
    .option('--all', 'include worker ids never leased')
    .action(async (opts: { all?: boolean }, cmd: Command) => {
      const { workers } = await admin(cmd).get<{ workers: Record<string, any>[] }>('/admin/workers');
      const shown = opts.all ? workers : workers.filter((w) => w.code || w.heartbeatAt);
      const live = workers.filter((w) => w.live).length;
      print(cmd, { workers: shown }, () => {
        const rows = shown.map((w) => [String(w.workerId), w.live ? 'yes' : 'no', w.heartbeatAt ?? '-', w.lastTimestamp ?? '-', w.self ? `${w.code} (answering instance)` : w.code || '-']);
        const summary = `${live} live of ${workers.length} worker ids\n`;
        return rows.length ? table(['WORKER', 'LIVE', 'HEARTBEAT', 'LAST TIMESTAMP', 'CODE'], rows) + summary : summary;
      });
    });

  program
    .command('decode')
    .description('explain a snowflake id with the layout of IDPOOL_SNOWFLAKE_* (or the options below); works offline')
    .argument('<id>', 'a snowflake id (decimal)')
    .addOption(new Option('--time-unit <unit>', 'IDPOOL_SNOWFLAKE_TIME_UNIT').choices(['ms', 's', 'min', 'h', 'd']))
    .option('--epoch <date>', 'IDPOOL_SNOWFLAKE_EPOCH: ISO date or Unix ms')
    .option('--timestamp-bits <n>', 'IDPOOL_SNOWFLAKE_TIMESTAMP_BITS')
    .option('--worker-bits <n>', 'IDPOOL_SNOWFLAKE_WORKER_BITS')
    .option('--reserved-bits <n>', 'IDPOOL_SNOWFLAKE_RESERVED_BITS')
    .option('--reserved-value <n>', 'IDPOOL_SNOWFLAKE_RESERVED_VALUE')
    .action(async (id: string, opts: Record<string, string | undefined>, cmd: Command) => {
      const overrides: Record<string, string> = {};
      const vars: Record<string, string> = {
        timeUnit: 'IDPOOL_SNOWFLAKE_TIME_UNIT',
        epoch: 'IDPOOL_SNOWFLAKE_EPOCH',
        timestampBits: 'IDPOOL_SNOWFLAKE_TIMESTAMP_BITS',
        workerBits: 'IDPOOL_SNOWFLAKE_WORKER_BITS',
        reservedBits: 'IDPOOL_SNOWFLAKE_RESERVED_BITS',
        reservedValue: 'IDPOOL_SNOWFLAKE_RESERVED_VALUE',
      };
      for (const [opt, variable] of Object.entries(vars)) if (opts[opt] !== undefined) overrides[variable] = opts[opt]!;
      // The same validation (and messages) as the service's start-up.
      const config = loadConfig({ ...io.env, ...overrides });
      const { SnowflakeLayout } = await import('../snowflake/layout');
      const { explainId, NotAnIdError } = await import('../snowflake/explain');
      const layout = SnowflakeLayout.create(config.snowflake, systemClock.now());
      let parts;
      try {
        parts = explainId(layout, systemClock.now(), id);
      } catch (err) {
        throw err instanceof NotAnIdError ? new CliError(EXIT_USAGE, err.message) : err;
      }
      print(cmd, parts, () => fields({ ...parts, layout: layout.describe() }));
    });

  return program;
}
